// SPDX-License-Identifier: GPL-2.0
/*
 * roce-flood: sends RoCEv2 RC SEND Only requests with a valid ICRC, as fast as it can, to
 * a range of QP numbers of a device, from a raw IPv4 socket (a peer ignoring every
 * acknowledge and flow control). Needs CAP_NET_RAW.
 *
 *   roce-flood SRC_IP DST_IP QPN_FIRST QPN_LAST SECONDS [PAYLOAD [FRAG]]
 *
 * PAYLOAD bytes (default 256, at most 4096) of payload per request. With FRAG (a multiple
 * of 8), each datagram goes as IPv4 fragments of FRAG bytes of IP payload each, which the
 * receiver reassembles before its UDP layer sees the datagram: a datagram whose pieces
 * are so many whole skbs. Prints the number of datagrams sent. The PSN is far from any
 * live one (half the PSN space from 0), so a responder that gets to the requests takes
 * them for old duplicates.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "roce-raw.h"

#define MAX_PAYLOAD 4096

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Sends the IPv4 datagram PKT of LEN bytes whole (FRAG 0), or as fragments of FRAG bytes
 * of its IP payload each, under its header's IP ID (no DF: the reassembled header, which
 * the ICRC covers but for TOS, TTL and checksum, is PKT's). Returns -1 with errno if the
 * stack refused a piece.
 */
static int send_datagram(int fd, const struct sockaddr_in *dst, const uint8_t *pkt, size_t len,
			 size_t frag)
{
	uint8_t piece[IP4_HLEN + 1400];
	size_t off, n, body = len - IP4_HLEN;

	if (!frag)
		return sendto(fd, pkt, len, 0, (const struct sockaddr *)dst, sizeof(*dst)) < 0 ?
			       -1 : 0;
	for (off = 0; off < body; off += n) {
		n = body - off < frag ? body - off : frag;
		memcpy(piece, pkt, IP4_HLEN);
		memcpy(piece + IP4_HLEN, pkt + IP4_HLEN + off, n);
		piece[2] = (IP4_HLEN + n) >> 8;
		piece[3] = (IP4_HLEN + n) & 0xff;
		/* MF unless last; the offset in units of 8 bytes. */
		piece[6] = (off + n < body ? 0x20 : 0) | ((off / 8) >> 8);
		piece[7] = (off / 8) & 0xff;
		roce_ip4_csum(piece);
		if (sendto(fd, piece, IP4_HLEN + n, 0, (const struct sockaddr *)dst,
			   sizeof(*dst)) < 0)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint8_t pkt[IP4_HLEN + UDP_HLEN + BTH_LEN + MAX_PAYLOAD + ICRC_LEN] = {};
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct in_addr src;
	unsigned long first, last, qpn, sent = 0, failed = 0;
	size_t payload = 256, frag = 0, len;
	uint16_t id = 1;
	double secs, end;
	int fd, one = 1;

	if (argc < 6 || inet_pton(AF_INET, argv[1], &src) != 1 ||
	    inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1) {
		fprintf(stderr,
			"usage: %s SRC_IP DST_IP QPN_FIRST QPN_LAST SECONDS [PAYLOAD [FRAG]]\n",
			argv[0]);
		return 2;
	}
	first = strtoul(argv[3], NULL, 0);
	last = strtoul(argv[4], NULL, 0);
	secs = strtod(argv[5], NULL);
	if (argc > 6)
		payload = strtoul(argv[6], NULL, 0);
	if (argc > 7)
		frag = strtoul(argv[7], NULL, 0);
	if (first > last || last > 0xffffff || payload > MAX_PAYLOAD || frag % 8 ||
	    frag > 1400) {
		fprintf(stderr, "bad QPN range, payload or fragment size\n");
		return 2;
	}
	payload = (payload + 3) & ~(size_t)3;
	len = IP4_HLEN + UDP_HLEN + BTH_LEN + payload + ICRC_LEN;
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
		perror("raw socket");
		return 1;
	}

	/* IPv4 (the kernel fills in the checksum, which the ICRC masks); UDP without checksum. */
	roce_ip4_hdr(pkt, len, src.s_addr, dst.sin_addr.s_addr, 0x1234);
	roce_udp_hdr(pkt + IP4_HLEN, 0xc000, len - IP4_HLEN);
	/* BTH: RC SEND Only, default P_Key, PSN 0x800000. */
	pkt[28] = 0x04;
	pkt[29] = 0;
	pkt[30] = 0xff;
	pkt[31] = 0xff;
	pkt[37] = 0x80;
	memset(pkt + 40, 0x5a, payload);

	end = now() + secs;
	qpn = first;
	while (now() < end) {
		for (int burst = 0; burst < 256; burst++) {
			pkt[33] = qpn >> 16;
			pkt[34] = qpn >> 8;
			pkt[35] = qpn;
			if (frag) {
				/* A fresh ID for each datagram's fragments; no DF. */
				pkt[4] = id >> 8;
				pkt[5] = id & 0xff;
				pkt[6] = 0;
				/* Never 0: the stack would give each fragment an ID of its own. */
				id = id == 0xffff ? 1 : id + 1;
			}
			roce_put_icrc(pkt, len);
			if (send_datagram(fd, &dst, pkt, len, frag) < 0) {
				if (errno != ENOBUFS && errno != EAGAIN) {
					perror("sendto");
					return 1;
				}
				failed++;
			} else {
				sent++;
			}
			qpn = qpn == last ? first : qpn + 1;
		}
	}
	printf("sent %lu datagrams (%lu refused by the stack) in %.1f s\n", sent, failed, secs);
	return 0;
}
