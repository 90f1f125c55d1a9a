// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, CRC area (see crc.h).
 */
#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/err.h>

#include "crc.h"

/*
 * Room for a descriptor of "crc32" on the stack: its state is the CRC, a u32 (checked
 * when the transform is allocated). SHASH_DESC_ON_STACK's room for any hash, 376 bytes,
 * would be zeroed on every update by the kernel's stack initialisation.
 */
#define CRC32_DESC_SIZE (sizeof(struct shash_desc) + sizeof(u32))

/*
 * The crypto API's "crc32" driver of highest priority registered now (loaded as a module
 * if none is): crc32-pclmul where the CPU has PCLMULQDQ and the kernel the driver (a
 * distribution's loads it at boot for such CPUs), else crc32-generic (crc32_le); the
 * device keeps it for its life. In *@tfm; 0 or an errno. Process context: it may sleep.
 */
int rrxe_helper_crc32_alloc(struct crypto_shash **tfm)
{
	struct crypto_shash *t = crypto_alloc_shash("crc32", 0, 0);

	if (IS_ERR(t))
		return PTR_ERR(t);
	if (crypto_shash_descsize(t) != sizeof(u32)) {
		crypto_free_shash(t);
		return -EINVAL;
	}
	*tfm = t;
	return 0;
}

void rrxe_helper_crc32_free(struct crypto_shash *tfm)
{
	crypto_free_shash(tfm);
}

/*
 * Continues the CRC-32 @crc (as crc32_le: "crc32" has no inversion, its state is the CRC)
 * over the @len bytes at @data with @tfm, as rxe's rxe_crc32 does; crc32_le() if the
 * crypto API fails. Any context but NMI; the descriptor is on the stack, so @tfm serves
 * any number of callers at once.
 */
u32 rrxe_helper_crc32_update(struct crypto_shash *tfm, u32 crc, const u8 *data, size_t len)
{
	char buf[CRC32_DESC_SIZE] __aligned(__alignof__(struct shash_desc));
	struct shash_desc *desc = (struct shash_desc *)buf;
	u32 *state = shash_desc_ctx(desc);

	desc->tfm = tfm;
	*state = crc;
	if (unlikely(len > UINT_MAX || crypto_shash_update(desc, data, len)))
		return crc32_le(crc, data, len);
	return *state;
}
