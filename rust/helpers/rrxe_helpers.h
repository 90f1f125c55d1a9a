/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe: out-of-line wrappers for static inline functions and
 * macros that bindgen cannot bind. Rust calls `rrxe_helper_NAME` as `NAME`
 * (Kbuild renames them with #[link_name]).
 */
#ifndef RRXE_HELPERS_H
#define RRXE_HELPERS_H

#include <linux/spinlock.h>
#include <linux/types.h>

struct net_device;
struct net;
struct socket;
struct sock;
struct sk_buff;
struct ib_device;
struct ib_udata;

/* Layout probes: C's view of the structures Rust shares with the core. */
size_t rrxe_helper_sizeof_ib_device(void);
size_t rrxe_helper_sizeof_ib_device_ops(void);
size_t rrxe_helper_sizeof_ib_qp_attr(void);
size_t rrxe_helper_sizeof_ib_ucontext(void);
size_t rrxe_helper_offsetof_ib_device_name(void);

/* Net devices. */
void rrxe_helper_dev_hold(struct net_device *dev);
void rrxe_helper_dev_put(struct net_device *dev);
const char *rrxe_helper_netdev_name(const struct net_device *dev);
unsigned short rrxe_helper_netdev_type(const struct net_device *dev);
struct device *rrxe_helper_netdev_parent(const struct net_device *dev);
unsigned int rrxe_helper_netdev_mtu(const struct net_device *dev);
bool rrxe_helper_netdev_registered(const struct net_device *dev);
bool rrxe_helper_netdev_is_up(const struct net_device *dev);
bool rrxe_helper_is_vlan_dev(const struct net_device *dev);
bool rrxe_helper_netif_running(const struct net_device *dev);
bool rrxe_helper_netif_carrier_ok(const struct net_device *dev);
void rrxe_helper_netdev_eui64(const struct net_device *dev, u8 *eui);
struct net *rrxe_helper_dev_net(const struct net_device *dev);
void *rrxe_helper_net_generic(const struct net *net, unsigned int id);

/* UDP tunnel sockets. */
int rrxe_helper_udp_sock_create(struct net *net, bool ipv6, __be16 port,
				struct socket **sockp);
void rrxe_helper_kfree_skb(struct sk_buff *skb);
void rrxe_helper_consume_skb(struct sk_buff *skb);

/* Memory. */
void *rrxe_helper_vmalloc_user(unsigned long size);

/* XArrays of object ids. */
struct xarray;
void rrxe_helper_xa_init_alloc_bh(struct xarray *xa);
int rrxe_helper_xa_alloc_cyclic_bh(struct xarray *xa, u32 *id, void *entry, u32 min, u32 max,
				   u32 *next);
void *rrxe_helper_xa_find_present(struct xarray *xa, unsigned long *index);
void rrxe_helper_xa_lock_bh(struct xarray *xa);
void rrxe_helper_xa_unlock_bh(struct xarray *xa);
void *rrxe_helper_xa_erase_bh(struct xarray *xa, unsigned long index);
void rrxe_helper_xa_store_reserved_bh(struct xarray *xa, unsigned long index, void *entry);

/* Locks. */
void rrxe_helper_spin_lock_bh(spinlock_t *lock);
void rrxe_helper_spin_unlock_bh(spinlock_t *lock);

/* Module parameters (6.12's Rust module! declares none). */
bool rrxe_helper_param_zero_copy(void);
bool rrxe_helper_param_bursts(void);

/* CPUs. */
unsigned int rrxe_helper_num_possible_cpus(void);
unsigned int rrxe_helper_num_online_cpus(void);

/* Netdevice notifier. */
struct netdev_notifier_info;
struct net_device *rrxe_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info);

/* RDMA core. */
bool rrxe_helper_ib_device_try_get(struct ib_device *dev);
bool rrxe_helper_rdma_has_roce_gid(struct ib_device *dev, u32 port, const u8 *gid,
				    struct net_device *ndev);
struct uverbs_attr_bundle;
struct ib_ucontext;
struct ib_udata *rrxe_helper_attrs_to_udata(struct uverbs_attr_bundle *attrs);
struct ib_ucontext *rrxe_helper_udata_to_ucontext(struct ib_udata *udata);

void *rrxe_helper_rcu_dereference_sk_user_data(const struct sock *sk);

void rrxe_helper_netdev_mac(const struct net_device *dev, u8 *mac);

unsigned long rrxe_helper_spin_lock_irqsave(spinlock_t *lock);
void rrxe_helper_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);

#endif /* RRXE_HELPERS_H */
