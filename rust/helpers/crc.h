/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe, CRC area (see rrxe_helpers.h for the conventions): the crypto API's
 * "crc32", the ICRC's CRC-32 as rxe computes it. Used by rust/kernel/crc.rs, and by the
 * CRC over an skb's bytes in net.c.
 */
#ifndef RRXE_HELPERS_CRC_H
#define RRXE_HELPERS_CRC_H

#include <linux/types.h>

struct crypto_shash;

int rrxe_helper_crc32_alloc(struct crypto_shash **tfm);
void rrxe_helper_crc32_free(struct crypto_shash *tfm);
u32 rrxe_helper_crc32_update(struct crypto_shash *tfm, u32 crc, const u8 *data, size_t len);

#endif
