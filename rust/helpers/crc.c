// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, CRC area (see crc.h).
 */
#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/err.h>

#include "crc.h"

/*
 * A descriptor of "crc32" on the stack. Its state is the CRC, a u32 (checked when the
 * transform is allocated): SHASH_DESC_ON_STACK's room for any hash is 368 bytes, which
 * the kernel's stack initialisation would zero on every update.
 */
struct crc32_desc {
	struct shash_desc desc;
	u32 crc;
};

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
	struct crc32_desc d = { .desc.tfm = tfm, .crc = crc };

	BUILD_BUG_ON(offsetof(struct crc32_desc, crc) != offsetof(struct shash_desc, __ctx));
	if (unlikely(len > UINT_MAX || crypto_shash_update(&d.desc, data, len)))
		return crc32_le(crc, data, len);
	return d.crc;
}
