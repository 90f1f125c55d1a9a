# SPDX-License-Identifier: GPL-2.0
"""What the bench's guest scripts write for the host's reports: key=value files."""


def read_env(path):
    """The key=value lines of PATH as a dict (lines without '=' ignored)."""
    env = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            k, sep, v = line.rstrip("\n").partition("=")
            if sep:
                env[k] = v
    return env
