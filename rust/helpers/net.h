/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe, net area (see rrxe_helpers.h for the conventions):
 * socket buffers, IPv4/IPv6 routes and output, and the owner socket of transmitted
 * skbs. Used by rust/kernel/net/{skb,route,xmit}.rs.
 */
#ifndef RRXE_HELPERS_NET_H
#define RRXE_HELPERS_NET_H

#include <linux/types.h>

struct crypto_shash;
struct dst_entry;
struct net;
struct net_device;
struct page;
struct sk_buff;
struct sk_buff_head;
struct sock;
struct socket;

/*
 * Where the headers of an skb are, as offsets from skb->head. Rust checks them
 * before it makes slices of the packet.
 */
struct rrxe_skb_layout {
	unsigned char *head;
	unsigned int data;		/* skb->data - skb->head */
	unsigned int tail;		/* skb_tail_pointer() - skb->head */
	unsigned int network;		/* skb->network_header */
	unsigned int transport;		/* skb->transport_header */
	bool transport_set;		/* skb_transport_header_was_set() */
	unsigned int len;		/* skb->len: from data, fragments included */
	u16 protocol;			/* skb->protocol, host order */
};

/* Socket buffers. */
void rrxe_helper_skb_layout(const struct sk_buff *skb, struct rrxe_skb_layout *layout);
struct net_device *rrxe_helper_skb_dev(const struct sk_buff *skb);
void rrxe_helper_skb_set_dev(struct sk_buff *skb, struct net_device *dev);
int rrxe_helper_skb_pull_transport(struct sk_buff *skb, unsigned int len, unsigned int max);
u32 rrxe_helper_skb_crc32(struct crypto_shash *tfm, const struct sk_buff *skb, int offset,
			  int len, u32 crc);
int rrxe_helper_skb_copy_to_page(const struct sk_buff *skb, int offset, struct page *page,
				 size_t off, size_t len);
struct sk_buff *rrxe_helper_skb_clone_atomic(struct sk_buff *skb);
struct sk_buff *rrxe_helper_alloc_tx_skb(const struct net_device *dev, unsigned int hdr_len,
					 unsigned int len, bool nowait, u16 protocol,
					 void **payload);
void *rrxe_helper_skb_push_headers(struct sk_buff *skb, unsigned int udp_len,
				   unsigned int ip_len);
void rrxe_helper_skb_loop_in(struct sk_buff *skb, unsigned int ip_len, struct net_device *dev);
void rrxe_helper_skb_free_put_dev(struct sk_buff *skb, bool consumed);
void rrxe_helper_skb_dst_set(struct sk_buff *skb, struct dst_entry *dst);
void rrxe_helper_skb_queue_head_init(struct sk_buff_head *list);
struct sk_buff *rrxe_helper_skb_queue_lock_peek(struct sk_buff_head *list,
						unsigned long *flags);
void rrxe_helper_skb_queue_unlink_unlock(struct sk_buff_head *list, struct sk_buff *skb,
					 unsigned long flags);

/* Paged skbs: payload sent from pages by reference (zero-copy transmit). */
bool rrxe_helper_netdev_can_sg(const struct net_device *dev);
bool rrxe_helper_sendpage_ok(struct page *page);
void rrxe_helper_get_page(struct page *page);
void rrxe_helper_put_page(struct page *page);
bool rrxe_helper_skb_add_page(struct sk_buff *skb, struct page *page, unsigned int off,
			      unsigned int len);
void *rrxe_helper_skb_add_trailer(struct sk_buff *skb, unsigned int len);

/* Routes and output. */
int rrxe_helper_route_output4(struct net_device *dev, __be32 saddr, __be32 daddr,
			      struct dst_entry **dstp);
int rrxe_helper_route_output6(struct net_device *dev, const u8 *saddr, const u8 *daddr,
			      struct dst_entry **dstp);
bool rrxe_helper_route_keep4(const struct dst_entry *dst, const struct net_device *dev);
u64 rrxe_helper_dev_net_cookie(const struct net_device *dev);
bool rrxe_helper_route_valid(struct dst_entry *dst, const struct net_device *dev, u64 net);
void rrxe_helper_dst_hold(struct dst_entry *dst);
void rrxe_helper_rcu_read_lock(void);
void rrxe_helper_rcu_read_unlock(void);

/* The owner socket of transmitted skbs (skb->sk and its destructor). */
int rrxe_helper_owner_sock_create(struct socket **sockp, void *data);
void rrxe_helper_skb_set_owner(struct sk_buff *skb, struct sock *sk,
			       void (*destructor)(struct sk_buff *skb));
struct sock *rrxe_helper_socket_sk(const struct socket *sock);
struct sock *rrxe_helper_skb_sk(const struct sk_buff *skb);
void *rrxe_helper_skb_owner_data(const struct sk_buff *skb, struct sock **sk);
void rrxe_helper_sock_put(struct sock *sk);

#endif
