// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe (see rrxe_helpers.h).
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/stddef.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include <net/addrconf.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "rrxe_helpers.h"

size_t rrxe_helper_sizeof_ib_device(void)
{
	return sizeof(struct ib_device);
}

size_t rrxe_helper_sizeof_ib_device_ops(void)
{
	return sizeof(struct ib_device_ops);
}

size_t rrxe_helper_sizeof_ib_qp_attr(void)
{
	return sizeof(struct ib_qp_attr);
}

size_t rrxe_helper_sizeof_ib_ucontext(void)
{
	return sizeof(struct ib_ucontext);
}

size_t rrxe_helper_offsetof_ib_device_name(void)
{
	return offsetof(struct ib_device, name);
}

void rrxe_helper_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rrxe_helper_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

const char *rrxe_helper_netdev_name(const struct net_device *dev)
{
	return dev->name;
}

unsigned short rrxe_helper_netdev_type(const struct net_device *dev)
{
	return dev->type;
}

struct device *rrxe_helper_netdev_parent(const struct net_device *dev)
{
	return dev->dev.parent;
}

unsigned int rrxe_helper_netdev_mtu(const struct net_device *dev)
{
	return READ_ONCE(dev->mtu);
}

bool rrxe_helper_netdev_registered(const struct net_device *dev)
{
	return READ_ONCE(dev->reg_state) == NETREG_REGISTERED;
}

bool rrxe_helper_netdev_is_up(const struct net_device *dev)
{
	return READ_ONCE(dev->flags) & IFF_UP;
}

bool rrxe_helper_is_vlan_dev(const struct net_device *dev)
{
	return is_vlan_dev(dev);
}

bool rrxe_helper_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

bool rrxe_helper_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

void rrxe_helper_netdev_mac(const struct net_device *dev, u8 *mac)
{
	ether_addr_copy(mac, dev->dev_addr);
}

void rrxe_helper_netdev_eui64(const struct net_device *dev, u8 *eui)
{
	addrconf_addr_eui48(eui, dev->dev_addr);
}

struct net *rrxe_helper_dev_net(const struct net_device *dev)
{
	return dev_net(dev);
}

void *rrxe_helper_net_generic(const struct net *net, unsigned int id)
{
	return net_generic(net, id);
}

int rrxe_helper_udp_sock_create(struct net *net, bool ipv6, __be16 port,
				struct socket **sockp)
{
	struct udp_port_cfg cfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.local_udp_port = port,
		.ipv6_v6only = ipv6,
	};

	return udp_sock_create(net, &cfg, sockp);
}

void rrxe_helper_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

void rrxe_helper_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
}

bool rrxe_helper_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

/* Whether the 16 bytes at @gid are a RoCEv2 GID of @port of @dev: of @ndev, or of any of
 * the port's net devices if @ndev is NULL. Any context: the GID table's lock is taken with
 * interrupts off. */
bool rrxe_helper_rdma_has_roce_gid(struct ib_device *dev, u32 port, const u8 *gid,
				    struct net_device *ndev)
{
	const struct ib_gid_attr *attr;
	union ib_gid g;

	memcpy(g.raw, gid, sizeof(g.raw));
	attr = rdma_find_gid_by_port(dev, &g, IB_GID_TYPE_ROCE_UDP_ENCAP, port, ndev);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

unsigned int rrxe_helper_num_possible_cpus(void)
{
	return num_possible_cpus();
}

unsigned int rrxe_helper_num_online_cpus(void)
{
	return num_online_cpus();
}

static bool zero_copy = true;
module_param(zero_copy, bool, 0644);
MODULE_PARM_DESC(zero_copy,
		 "Send RC request payloads from user memory by reference to their pages: "
		 "packets of 1 KiB or more to this device itself, of 2 KiB or more through "
		 "net devices that do scatter-gather (default: on; see "
		 "Documentation/infiniband/rrxe.rst)");

bool rrxe_helper_param_zero_copy(void)
{
	return READ_ONCE(zero_copy);
}

static bool bursts = true;
module_param(bursts, bool, 0644);
MODULE_PARM_DESC(bursts,
		 "Send consecutive packets of one RC SEND, RDMA WRITE (by reference, with "
		 "zero_copy) or RDMA READ response between QPs of this device as one datagram "
		 "(default: on; see Documentation/infiniband/rrxe.rst)");

bool rrxe_helper_param_bursts(void)
{
	return READ_ONCE(bursts);
}

struct net_device *rrxe_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{
	return netdev_notifier_info_to_dev(info);
}

void rrxe_helper_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

unsigned long rrxe_helper_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rrxe_helper_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

void rrxe_helper_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

struct ib_udata *rrxe_helper_attrs_to_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_ucontext *rrxe_helper_udata_to_ucontext(struct ib_udata *udata)
{
	return rdma_udata_to_uverbs_attr_bundle(udata)->context;
}

void *rrxe_helper_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

void rrxe_helper_xa_init_alloc_bh(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
}

int rrxe_helper_xa_alloc_cyclic_bh(struct xarray *xa, u32 *id, void *entry, u32 min, u32 max,
				   u32 *next)
{
	return xa_alloc_cyclic_bh(xa, id, entry, XA_LIMIT(min, max), next, GFP_KERNEL);
}

void *rrxe_helper_xa_find_present(struct xarray *xa, unsigned long *index)
{
	return xa_find(xa, index, ULONG_MAX, XA_PRESENT);
}

void rrxe_helper_xa_lock_bh(struct xarray *xa)
{
	xa_lock_bh(xa);
}

void rrxe_helper_xa_unlock_bh(struct xarray *xa)
{
	xa_unlock_bh(xa);
}

void *rrxe_helper_xa_erase_bh(struct xarray *xa, unsigned long index)
{
	return xa_erase_bh(xa, index);
}

void rrxe_helper_xa_store_reserved_bh(struct xarray *xa, unsigned long index, void *entry)
{
	/* The index is reserved: the store replaces the reservation without allocating. */
	WARN_ON(xa_is_err(xa_store_bh(xa, index, entry, GFP_KERNEL)));
}

void *rrxe_helper_rcu_dereference_sk_user_data(const struct sock *sk)
{
	return rcu_dereference_sk_user_data(sk);
}
