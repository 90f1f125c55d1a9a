// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, mem area (see mem.h).
 */
#include "mem.h"
