/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 packets built by hand, for the guest programs that forge them (forge.c,
 * wire-fuzz.c, roce-flood.c): the ICRC of IPv4 and IPv6 datagrams, IPv4, IPv6 and UDP headers with
 * their checksums, and entering a network namespace by name.
 *
 * Buffers start at the IP header; lengths count from there to the end of the ICRC.
 */
#ifndef ROCE_RAW_H
#define ROCE_RAW_H

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ROCE_PORT 4791
#define IP4_HLEN 20
#define IP6_HLEN 40
#define UDP_HLEN 8
#define BTH_LEN 12
#define ICRC_LEN 4
#define PSN_MASK 0xffffffu

/* crc32_le of Linux: reflected polynomial 0xedb88320, no inversion. */
static inline uint32_t roce_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];

	if (!table[1]) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ (0xedb88320u & -(c & 1));
			table[i] = c;
		}
	}
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* The IP header length of the datagram at IP: 40 for version 6, else 20. */
static inline size_t roce_ip_hlen(const uint8_t *ip)
{
	return ip[0] >> 4 == 6 ? IP6_HLEN : IP4_HLEN;
}

/*
 * The ICRC of the datagram at IP, LEN bytes (at least its IP header and the ICRC), as
 * rxe_icrc.c and rrxe's proto/icrc.rs compute it: the CRC, seeded with eight 0xff bytes
 * for the masked LRH, of the IP, UDP and base transport headers with their variant fields
 * set to ones (IPv4: TOS, TTL and checksum; IPv6: traffic class, flow label and hop
 * limit; the UDP checksum; the BTH's reserved byte), then of the rest up to the ICRC.
 * A datagram too short for these headers: the part of them that is there.
 */
static inline uint32_t roce_icrc(const uint8_t *ip, size_t len)
{
	uint8_t m[IP6_HLEN + UDP_HLEN + BTH_LEN];
	size_t ihl = roce_ip_hlen(ip), body = len - ICRC_LEN, h = ihl + UDP_HLEN + BTH_LEN;

	if (h > body)
		h = body;
	memcpy(m, ip, h);
	if (ihl == IP4_HLEN) {
		m[1] = 0xff;
		m[8] = 0xff;
		m[10] = m[11] = 0xff;
	} else {
		m[0] |= 0x0f;
		m[1] = m[2] = m[3] = 0xff;
		m[7] = 0xff;
	}
	m[ihl + 6] = m[ihl + 7] = 0xff;
	m[ihl + UDP_HLEN + 4] = 0xff;
	return ~roce_crc32(roce_crc32(0xdebb20e3, m, h), ip + h, body - h);
}

/* Writes the ICRC into the last 4 bytes, least significant byte first. */
static inline void roce_put_icrc(uint8_t *ip, size_t len)
{
	uint32_t c = roce_icrc(ip, len);

	for (int i = 0; i < 4; i++)
		ip[len - 4 + i] = c >> (8 * i);
}

/* The ones' complement sum of N bytes (16-bit big-endian words), added to SUM. */
static inline uint32_t inet_sum(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static inline uint16_t inet_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/* Sets the IPv4 header checksum (over the header length IHL says). */
static inline void roce_ip4_csum(uint8_t *ip)
{
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = inet_fold(inet_sum(ip, (ip[0] & 0xf) * 4, 0));
	ip[10] = c >> 8;
	ip[11] = c & 0xff;
}

/* An IPv4 header (DF, TTL 64, UDP) for a datagram of LEN bytes; addresses in network order. */
static inline void roce_ip4_hdr(uint8_t *ip, size_t len, uint32_t src, uint32_t dst, uint16_t id)
{
	memset(ip, 0, IP4_HLEN);
	ip[0] = 0x45;
	ip[2] = len >> 8;
	ip[3] = len & 0xff;
	ip[4] = id >> 8;
	ip[5] = id & 0xff;
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	roce_ip4_csum(ip);
}

/* An IPv6 header (hop limit 64, UDP) for a datagram of LEN bytes. */
static inline void roce_ip6_hdr(uint8_t *ip, size_t len, const uint8_t *src, const uint8_t *dst)
{
	memset(ip, 0, IP6_HLEN);
	ip[0] = 0x60;
	ip[4] = (len - IP6_HLEN) >> 8;
	ip[5] = (len - IP6_HLEN) & 0xff;
	ip[6] = IPPROTO_UDP;
	ip[7] = 64;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
}

/* A UDP header to port 4791 for LEN bytes of UDP header and payload, checksum 0. */
static inline void roce_udp_hdr(uint8_t *udp, uint16_t sport, size_t len)
{
	udp[0] = sport >> 8;
	udp[1] = sport & 0xff;
	udp[2] = ROCE_PORT >> 8;
	udp[3] = ROCE_PORT & 0xff;
	udp[4] = len >> 8;
	udp[5] = len & 0xff;
	udp[6] = udp[7] = 0;
}

/*
 * Sets the UDP checksum of the IPv6 datagram at IP, LEN bytes, over the UDP length its
 * header claims (bounded by what is there), as the receiver computes it.
 */
static inline void roce_udp6_csum(uint8_t *ip, size_t len)
{
	uint8_t *udp = ip + IP6_HLEN;
	size_t ulen = (size_t)udp[4] << 8 | udp[5];
	uint32_t sum;
	uint16_t c;

	if (ulen > len - IP6_HLEN)
		ulen = len - IP6_HLEN;
	udp[6] = udp[7] = 0;
	sum = inet_sum(ip + 8, 32, ulen + IPPROTO_UDP);
	c = inet_fold(inet_sum(udp, ulen, sum));
	c = c ? c : 0xffff;
	udp[6] = c >> 8;
	udp[7] = c & 0xff;
}

/*
 * Moves this thread into network namespace NS (a name under /run/netns). Returns a
 * descriptor of the namespace it left, for netns_leave(), or -1.
 */
static inline int netns_enter(const char *ns)
{
	char path[256];
	int self = open("/proc/thread-self/ns/net", O_RDONLY), fd;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY);
	if (self < 0 || fd < 0 || setns(fd, CLONE_NEWNET)) {
		if (self >= 0)
			close(self);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return self;
}

/* Returns to the namespace netns_enter() left; 0, or -1. */
static inline int netns_leave(int self)
{
	int r = setns(self, CLONE_NEWNET);

	close(self);
	return r;
}

#endif
