// SPDX-License-Identifier: GPL-2.0
/*
 * roce-flood: sends RoCEv2 RC SEND Only requests with a valid ICRC, as fast as it can, to
 * a range of QP numbers of a device, from a raw IPv4 socket (a peer ignoring every
 * acknowledge and flow control). Needs CAP_NET_RAW.
 *
 *   roce-flood SRC_IP DST_IP QPN_FIRST QPN_LAST SECONDS [PAYLOAD]
 *
 * Prints the number of packets sent. The PSN is far from any live one (half the PSN space
 * from 0), so a responder that gets to the requests takes them for old duplicates.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROCE_PORT 4791
#define BTH_LEN 12
#define MAX_PAYLOAD 1024

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* The RoCEv2 ICRC of an IPv4 packet of LEN bytes (IP header, UDP, BTH, payload, pad). */
static uint32_t icrc(const uint8_t *pkt, size_t len)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t hdr[20 + 8 + BTH_LEN];
	uint32_t crc = crc_update(0xffffffff, ones, sizeof(ones));

	memcpy(hdr, pkt, sizeof(hdr));
	hdr[1] = 0xff;			/* TOS */
	hdr[8] = 0xff;			/* TTL */
	hdr[10] = hdr[11] = 0xff;	/* header checksum */
	hdr[26] = hdr[27] = 0xff;	/* UDP checksum */
	hdr[28 + 4] = 0xff;		/* BTH: FECN, BECN, reserved */
	crc = crc_update(crc, hdr, sizeof(hdr));
	crc = crc_update(crc, pkt + sizeof(hdr), len - sizeof(hdr));
	return ~crc;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint8_t pkt[20 + 8 + BTH_LEN + MAX_PAYLOAD + 4] = {};
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct in_addr src;
	unsigned long first, last, qpn, sent = 0, failed = 0;
	size_t payload = 256, len;
	double secs, end;
	int fd, one = 1;

	if (argc < 6 || inet_pton(AF_INET, argv[1], &src) != 1 ||
	    inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: %s SRC_IP DST_IP QPN_FIRST QPN_LAST SECONDS [PAYLOAD]\n",
			argv[0]);
		return 2;
	}
	first = strtoul(argv[3], NULL, 0);
	last = strtoul(argv[4], NULL, 0);
	secs = strtod(argv[5], NULL);
	if (argc > 6)
		payload = strtoul(argv[6], NULL, 0);
	if (first > last || last > 0xffffff || payload > MAX_PAYLOAD) {
		fprintf(stderr, "bad QPN range or payload\n");
		return 2;
	}
	payload = (payload + 3) & ~(size_t)3;
	len = 20 + 8 + BTH_LEN + payload + 4;
	crc_init();
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
		perror("raw socket");
		return 1;
	}

	/* IPv4: every field set, so the kernel changes only the checksum (masked). */
	pkt[0] = 0x45;
	pkt[2] = len >> 8;
	pkt[3] = len & 0xff;
	pkt[4] = 0x12;			/* identification */
	pkt[5] = 0x34;
	pkt[6] = 0x40;			/* DF */
	pkt[8] = 64;
	pkt[9] = IPPROTO_UDP;
	memcpy(pkt + 12, &src, 4);
	memcpy(pkt + 16, &dst.sin_addr, 4);
	/* UDP, without checksum. */
	pkt[20] = 0xc0;
	pkt[21] = 0x00;
	pkt[22] = ROCE_PORT >> 8;
	pkt[23] = ROCE_PORT & 0xff;
	pkt[24] = (len - 20) >> 8;
	pkt[25] = (len - 20) & 0xff;
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
			uint32_t crc;

			pkt[33] = qpn >> 16;
			pkt[34] = qpn >> 8;
			pkt[35] = qpn;
			crc = icrc(pkt, len - 4);
			pkt[len - 4] = crc;
			pkt[len - 3] = crc >> 8;
			pkt[len - 2] = crc >> 16;
			pkt[len - 1] = crc >> 24;
			if (sendto(fd, pkt, len, 0, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
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
	printf("sent %lu packets (%lu refused by the stack) in %.1f s\n", sent, failed, secs);
	return 0;
}
