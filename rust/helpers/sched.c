// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, sched area (see sched.h).
 */
#include "sched.h"
