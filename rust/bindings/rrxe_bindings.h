/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers rrxe's bindings are generated from (see Kbuild).
 */
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/vmalloc.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_cache.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/rdma_user_rxe.h>

#include "rrxe_helpers.h"
#include "mem.h"
#include "crc.h"
#include "net.h"
#include "sched.h"
#include "rxe_alias.h"
