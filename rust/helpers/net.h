/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe, net area (see rrxe_helpers.h for the conventions).
 */
#ifndef RRXE_HELPERS_NET_H
#define RRXE_HELPERS_NET_H

#include <linux/types.h>

#endif
