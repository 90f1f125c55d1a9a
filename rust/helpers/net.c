// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, net area (see net.h).
 */
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/dst.h>
#include <net/ip.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <net/sock.h>

#include "net.h"

void rrxe_helper_skb_layout(const struct sk_buff *skb, struct rrxe_skb_layout *layout)
{
	*layout = (struct rrxe_skb_layout){
		.head = skb->head,
		.data = skb->data - skb->head,
		.tail = skb_tail_pointer(skb) - skb->head,
		.network = skb->network_header,
		.transport = skb->transport_header,
		.transport_set = skb_transport_header_was_set(skb),
		.nonlinear = skb_is_nonlinear(skb),
		.protocol = ntohs(skb->protocol),
	};
}

struct net_device *rrxe_helper_skb_dev(const struct sk_buff *skb)
{
	return skb->dev;
}

void rrxe_helper_skb_set_dev(struct sk_buff *skb, struct net_device *dev)
{
	skb->dev = dev;
}

void rrxe_helper_skb_set_protocol(struct sk_buff *skb, u16 protocol)
{
	skb->protocol = htons(protocol);
}

int rrxe_helper_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

struct sk_buff *rrxe_helper_skb_clone_atomic(struct sk_buff *skb)
{
	return skb_clone(skb, GFP_ATOMIC);
}

struct sk_buff *rrxe_helper_alloc_skb_atomic(unsigned int size)
{
	return alloc_skb(size, GFP_ATOMIC);
}

void rrxe_helper_skb_reserve(struct sk_buff *skb, unsigned int len)
{
	skb_reserve(skb, len);
}

void *rrxe_helper_skb_put_zero(struct sk_buff *skb, unsigned int len)
{
	return skb_put_zero(skb, len);
}

void rrxe_helper_skb_reset_network_header(struct sk_buff *skb)
{
	skb_reset_network_header(skb);
}

void rrxe_helper_skb_reset_transport_header(struct sk_buff *skb)
{
	skb_reset_transport_header(skb);
}

void rrxe_helper_skb_dst_set(struct sk_buff *skb, struct dst_entry *dst)
{
	skb_dst_set(skb, dst);
}

void rrxe_helper_skb_queue_head_init(struct sk_buff_head *list)
{
	/* One lockdep class for every rrxe queue: their locks never nest. */
	skb_queue_head_init(list);
}

u32 rrxe_helper_skb_queue_len_lockless(const struct sk_buff_head *list)
{
	return skb_queue_len_lockless(list);
}

/* Takes the queue's lock (IRQs off) and returns its head skb, or NULL. */
struct sk_buff *rrxe_helper_skb_queue_lock_peek(struct sk_buff_head *list,
						unsigned long *flags)
	__acquires(&list->lock)
{
	spin_lock_irqsave(&list->lock, *flags);
	return skb_peek(list);
}

/* Unlinks skb (if not NULL; queued on list) and drops the lock lock_peek took. */
void rrxe_helper_skb_queue_unlink_unlock(struct sk_buff_head *list, struct sk_buff *skb,
					 unsigned long flags)
	__releases(&list->lock)
{
	if (skb)
		__skb_unlink(skb, list);
	spin_unlock_irqrestore(&list->lock, flags);
}

unsigned int rrxe_helper_ll_reserved_space(const struct net_device *dev)
{
	return LL_RESERVED_SPACE(dev);
}

int rrxe_helper_route_output4(struct net_device *dev, __be32 saddr, __be32 daddr,
			      struct dst_entry **dstp)
{
	struct flowi4 fl = {
		.flowi4_oif = dev->ifindex,
		.flowi4_proto = IPPROTO_UDP,
		.saddr = saddr,
		.daddr = daddr,
	};
	struct rtable *rt = ip_route_output_key(dev_net(dev), &fl);

	if (IS_ERR(rt))
		return PTR_ERR(rt);
	*dstp = &rt->dst;
	return 0;
}

int rrxe_helper_route_output6(struct net_device *dev, const u8 *saddr, const u8 *daddr,
			      struct dst_entry **dstp)
{
	struct flowi6 fl = {
		.flowi6_oif = dev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct dst_entry *dst;
	int err;

	memcpy(&fl.saddr, saddr, sizeof(fl.saddr));
	memcpy(&fl.daddr, daddr, sizeof(fl.daddr));
	dst = ipv6_stub->ipv6_dst_lookup_flow(dev_net(dev), NULL, &fl, NULL);
	if (IS_ERR(dst))
		return PTR_ERR(dst);
	err = dst->error;
	if (err) {
		dst_release(dst);
		return err < 0 ? err : -EHOSTUNREACH;
	}
	*dstp = dst;
	return 0;
}

void rrxe_helper_dst_hold(struct dst_entry *dst)
{
	dst_hold(dst);
}

void rrxe_helper_rcu_read_lock(void)
{
	rcu_read_lock();
}

void rrxe_helper_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

int rrxe_helper_owner_sock_create(struct socket **sockp, void *data)
{
	/*
	 * A plain kernel UDP socket that never sends: it only anchors skb->sk. Like
	 * rdma_rxe's per-QP socket it lives in init_net, which never goes away, so it
	 * may outlive the namespace of the device the skbs leave on.
	 */
	int err = sock_create_kern(&init_net, AF_INET, SOCK_DGRAM, 0, sockp);

	if (err)
		return err;
	rcu_assign_sk_user_data((*sockp)->sk, data);
	return 0;
}

void rrxe_helper_skb_set_owner(struct sk_buff *skb, struct sock *sk,
			       void (*destructor)(struct sk_buff *skb))
{
	sock_hold(sk);
	skb->sk = sk;
	skb->destructor = destructor;
}

struct sock *rrxe_helper_socket_sk(const struct socket *sock)
{
	return sock->sk;
}

struct sock *rrxe_helper_skb_sk(const struct sk_buff *skb)
{
	return skb->sk;
}

void *rrxe_helper_sk_user_data(const struct sock *sk)
{
	/* Set once, before any skb points at the socket, and never changed: no RCU. */
	uintptr_t data = (uintptr_t)rcu_dereference_protected(__sk_user_data(sk), 1);

	return (void *)(data & SK_USER_DATA_PTRMASK);
}

void rrxe_helper_sock_put(struct sock *sk)
{
	sock_put(sk);
}
