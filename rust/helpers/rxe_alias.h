/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The size of rdma_rxe's device structure, for bindgen only (rust/kernel/rdma/device.rs).
 *
 * rdma_rxe's netdev notifier (rxe_notify) and its newlink look devices up by net device
 * and driver id (rxe_get_dev_from_net: ib_device_get_by_netdev(ndev, RDMA_DRIVER_RXE)) and
 * take whatever they find for a struct rxe_dev: on link and MTU changes they write its port
 * state, MTU and counters. rrxe devices report RDMA_DRIVER_RXE too (the userspace provider
 * matches it), so while both modules are loaded every rrxe device reserves
 * sizeof(struct rxe_dev) bytes that only rxe writes and nothing reads.
 *
 * rxe.h is rxe's private header, from the kernel tree rrxe is built against (Kbuild adds
 * its directory to bindgen's include path), so the size is that kernel's, for its config.
 */
#ifndef RRXE_RXE_ALIAS_H
#define RRXE_RXE_ALIAS_H

#include "rxe.h"

enum { RRXE_RXE_DEV_SIZE = sizeof(struct rxe_dev) };

#endif
