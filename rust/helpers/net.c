// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, net area (see net.h).
 */
#include "net.h"
