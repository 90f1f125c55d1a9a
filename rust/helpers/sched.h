/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe, sched area (see rrxe_helpers.h for the conventions).
 */
#ifndef RRXE_HELPERS_SCHED_H
#define RRXE_HELPERS_SCHED_H

#include <linux/types.h>

#endif
