// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe (see rrxe_helpers.h).
 */
#include <linux/stddef.h>
#include <rdma/ib_verbs.h>

#include "rrxe_helpers.h"

size_t rrxe_helper_sizeof_ib_device(void)
{
	return sizeof(struct ib_device);
}

size_t rrxe_helper_sizeof_ib_device_ops(void)
{
	return sizeof(struct ib_device_ops);
}

size_t rrxe_helper_sizeof_ib_qp_attr(void)
{
	return sizeof(struct ib_qp_attr);
}

size_t rrxe_helper_sizeof_ib_ucontext(void)
{
	return sizeof(struct ib_ucontext);
}

size_t rrxe_helper_offsetof_ib_device_name(void)
{
	return offsetof(struct ib_device, name);
}
