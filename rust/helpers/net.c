// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, net area (see net.h).
 */
#include <linux/highmem.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/dst.h>
#include <net/ip.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <net/sock.h>
#include <net/xfrm.h>

#include "crc.h"
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
		.len = skb->len,
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

/*
 * Makes the first @len bytes after the transport header of a received skb linear (all
 * of them if it has fewer), as pskb_may_pull() does from skb->data: -ENOMEM if it cannot.
 * The transport header must not lie before skb->data beyond what is linear already.
 * -EMSGSIZE if more than @max bytes follow the transport header.
 *
 * A datagram that holds much more memory than its length is made linear whole, which
 * frees what it held: IP reassembly makes a datagram of its fragments, in sizes the
 * sender chooses (8 bytes each: a 4 KiB datagram of 500 skbs in a fragment list, or of
 * 17 receive buffers taken over as page fragments), so that what a queue of datagrams
 * holds is bounded by their bytes (a fragment list always; else more than four pages
 * beyond a linear skb of the length). A NIC's one or two buffers for the payload, a
 * local MSG_ZEROCOPY sender's pages (whole pages in truesize: two for a payload across
 * a page boundary) and rrxe's own zero-copy pages (their length) stay where they are.
 */
int rrxe_helper_skb_pull_transport(struct sk_buff *skb, unsigned int len, unsigned int max)
{
	int need = skb_transport_offset(skb) + (int)len;

	if (skb->len > skb_transport_offset(skb) + max)
		return -EMSGSIZE;
	if (skb_has_frag_list(skb) || skb->truesize > SKB_TRUESIZE(skb->len) + 4 * PAGE_SIZE)
		return skb_linearize(skb);
	if (need > (int)skb->len)
		need = skb->len;
	return need <= 0 || pskb_may_pull(skb, need) ? 0 : -ENOMEM;
}

/*
 * Continues the CRC-32 @crc (crc32_le, computed with @tfm: crc.c) over the @len bytes at
 * @offset from skb->data of @skb, wherever they lie (linear part, fragments, fragment
 * list), in one pass in order (skb_seq_read; __skb_checksum would combine a CRC per
 * fragment, crc32_le_shift, which costs more than the CRC of a fragment). The range must
 * lie within skb->len (else @crc, unchanged, and a warning).
 */
u32 rrxe_helper_skb_crc32(struct crypto_shash *tfm, const struct sk_buff *skb, int offset,
			  int len, u32 crc)
{
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const u8 *data;

	if (WARN_ON_ONCE(offset < 0 || len < 0 || offset > (int)skb->len - len))
		return crc;
	/* skb_seq_read only reads the skb. */
	skb_prepare_seq_read((struct sk_buff *)skb, offset, offset + len, &st);
	while (done < len && (n = skb_seq_read(done, &data, &st)) != 0) {
		/* A block may run past the end asked for. */
		n = min_t(unsigned int, n, len - done);
		crc = rrxe_helper_crc32_update(tfm, crc, data, n);
		done += n;
	}
	skb_abort_seq_read(&st);
	return crc;
}

/*
 * Copies the @len bytes at @offset from skb->data of @skb (wherever they lie) to @off in
 * @page (off + len <= PAGE_SIZE); -EFAULT, nothing copied, if the skb has fewer.
 */
int rrxe_helper_skb_copy_to_page(const struct sk_buff *skb, int offset, struct page *page,
				 size_t off, size_t len)
{
	u8 *va = kmap_local_page(page);
	int err = skb_copy_bits(skb, offset, va + off, len);

	flush_dcache_page(page);
	kunmap_local(va);
	return err;
}

struct sk_buff *rrxe_helper_skb_clone_atomic(struct sk_buff *skb)
{
	return skb_clone(skb, GFP_ATOMIC);
}

/*
 * A datagram to send out of @dev: @len zeroed bytes of UDP payload (*@payload points at
 * them) after headroom for @hdr_len bytes of IP and UDP headers and for the link layer,
 * with skb->protocol @protocol (host order). GFP_ATOMIC, or if @nowait without the atomic
 * or emergency reserves and without a warning. NULL if no memory.
 */
struct sk_buff *rrxe_helper_alloc_tx_skb(const struct net_device *dev, unsigned int hdr_len,
					 unsigned int len, bool nowait, u16 protocol,
					 void **payload)
{
	unsigned int headroom = LL_RESERVED_SPACE(dev) + hdr_len;
	gfp_t gfp = nowait ? GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC : GFP_ATOMIC;
	struct sk_buff *skb = alloc_skb(headroom + len, gfp);

	if (!skb)
		return NULL;
	skb_reserve(skb, headroom);
	*payload = __skb_put_zero(skb, len);
	skb->protocol = htons(protocol);
	return skb;
}

/*
 * Pushes @udp_len bytes of UDP header and then @ip_len bytes of IP header in front of
 * skb->data and sets the transport and network headers there: the new skb->data (the IP
 * header), or NULL, nothing pushed, if the headroom is short of them.
 */
void *rrxe_helper_skb_push_headers(struct sk_buff *skb, unsigned int udp_len,
				   unsigned int ip_len)
{
	if (skb_headroom(skb) < udp_len + ip_len)
		return NULL;
	__skb_push(skb, udp_len);
	skb_reset_transport_header(skb);
	__skb_push(skb, ip_len);
	skb_reset_network_header(skb);
	return skb->data;
}

/*
 * Turns a datagram built to send into one received on @dev: pulls its @ip_len bytes of
 * IP header (left in place, the network header) and sets skb->dev to @dev with a
 * reference on it, which the skb's new owner holds.
 */
void rrxe_helper_skb_loop_in(struct sk_buff *skb, unsigned int ip_len, struct net_device *dev)
{
	__skb_pull(skb, ip_len);
	skb->dev = dev;
	dev_hold(dev);
}

/*
 * Frees an skb (consume_skb() if @consumed, else kfree_skb()) and then drops a reference
 * on its skb->dev, if set, that its owner held.
 */
void rrxe_helper_skb_free_put_dev(struct sk_buff *skb, bool consumed)
{
	struct net_device *dev = skb->dev;

	if (consumed)
		consume_skb(skb);
	else
		kfree_skb(skb);
	dev_put(dev);
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

/*
 * Whether an IPv4 route from rrxe_helper_route_output4() out of @dev may be kept after
 * the RCU section of its lookup and released later, in any context, also after its
 * network namespace is gone: a plain route out of @dev, whose operations and memory are
 * global (ipv4_dst_ops) and which the kernel moves off its device when the device goes
 * (dst_dev_put(), rt_flush_dev()). Not an xfrm bundle or queueing dummy (operations of
 * the namespace), nor a route with a tunnel encapsulation (its lwtstate's last release
 * may reach state of the namespace), nor a blackhole route (obsolete is not FORCE_CHK;
 * it holds the namespace's loopback device), nor a route to a local, broadcast or
 * multicast address (on the uncached list, which path MTU and redirect updates do not
 * reach; a multicast route's local copy is decided at the lookup), nor one moved off
 * @dev already.
 */
bool rrxe_helper_route_keep4(const struct dst_entry *dst, const struct net_device *dev)
{
	return READ_ONCE(dst->dev) == dev && dst->ops->family == AF_INET &&
	       READ_ONCE(dst->obsolete) == DST_OBSOLETE_FORCE_CHK && xfrm_dst_path(dst) == dst &&
	       !dst->lwtstate &&
	       !(dst_rtable(dst)->rt_flags & (RTCF_LOCAL | RTCF_BROADCAST | RTCF_MULTICAST));
}

/* The cookie of the network namespace of @dev (never reused), for comparison only. */
u64 rrxe_helper_dev_net_cookie(const struct net_device *dev)
{
	return dev_net(dev)->net_cookie;
}

/*
 * Whether a kept IPv4 route @dst out of @dev may still be used: it still goes out of @dev
 * (a route moved off a device that went may still pass its check: rt_flush_dev() leaves
 * it FORCE_CHK), @dev is still in the namespace of cookie @net (the route generations
 * that dst_check() compares start at 0 in every namespace), and dst_check() passes (no
 * route, rule, address or device change, no path MTU or redirect exception since).
 * Under RCU.
 */
bool rrxe_helper_route_valid(struct dst_entry *dst, const struct net_device *dev, u64 net)
{
	return READ_ONCE(dst->dev) == dev && dev_net(dev)->net_cookie == net &&
	       dst_check(dst, 0);
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

/* The owner socket of @skb (*@sk, not NULL) and that socket's user data. */
void *rrxe_helper_skb_owner_data(const struct sk_buff *skb, struct sock **sk)
{
	/* Set once, before any skb points at the socket, and never changed: no RCU. */
	uintptr_t data = (uintptr_t)rcu_dereference_protected(__sk_user_data(skb->sk), 1);

	*sk = skb->sk;
	return (void *)(data & SK_USER_DATA_PTRMASK);
}

void rrxe_helper_sock_put(struct sock *sk)
{
	sock_put(sk);
}

bool rrxe_helper_netdev_can_sg(const struct net_device *dev)
{
	return READ_ONCE(dev->features) & NETIF_F_SG;
}

bool rrxe_helper_sendpage_ok(struct page *page)
{
	return sendpage_ok(page);
}

void rrxe_helper_get_page(struct page *page)
{
	get_page(page);
}

void rrxe_helper_put_page(struct page *page)
{
	put_page(page);
}

/*
 * Appends @len bytes at @off of @page as the next fragment of @skb, which takes over the
 * caller's page reference; false (nothing taken) if only the last fragment is left, which
 * is kept for a trailer. The fragments are marked shared: their owner may write them while
 * the skb is in flight, so whoever would change them in place must copy them first (as for
 * spliced pages).
 */
bool rrxe_helper_skb_add_page(struct sk_buff *skb, struct page *page, unsigned int off,
			      unsigned int len)
{
	unsigned int i = skb_shinfo(skb)->nr_frags;

	if (i + 1 >= MAX_SKB_FRAGS)
		return false;
	skb_fill_page_desc_noacc(skb, i, page, off, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	return true;
}

/*
 * Appends a zeroed fragment of @len bytes (at most a few words: a trailer) from the page
 * fragment cache and returns its address, or NULL if the skb has no fragment left or
 * memory is short.
 */
void *rrxe_helper_skb_add_trailer(struct sk_buff *skb, unsigned int len)
{
	unsigned int i = skb_shinfo(skb)->nr_frags;
	struct page *page;
	void *p;

	if (i >= MAX_SKB_FRAGS)
		return NULL;
	p = netdev_alloc_frag(len);
	if (!p)
		return NULL;
	memset(p, 0, len);
	page = virt_to_head_page(p);
	skb_add_rx_frag(skb, i, page, p - page_address(page), len, SKB_DATA_ALIGN(len));
	return p;
}
