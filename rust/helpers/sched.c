// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rrxe, sched area (see sched.h).
 */
#include <linux/jiffies.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/timer.h>
#include <linux/workqueue.h>

#include "sched.h"

unsigned long rrxe_helper_jiffies_now(void)
{
	return READ_ONCE(jiffies);
}

/* The CPU the caller runs on now: a hint, it may run on another right after. */
unsigned int rrxe_helper_raw_smp_processor_id(void)
{
	return raw_smp_processor_id();
}

unsigned int rrxe_helper_nr_cpu_ids(void)
{
	return nr_cpu_ids;
}

/* The calling task's count of voluntary context switches (its sleeps). */
unsigned long rrxe_helper_current_nvcsw(void)
{
	return READ_ONCE(current->nvcsw);
}

unsigned long rrxe_helper_usecs_to_jiffies(unsigned int usecs)
{
	return usecs_to_jiffies(usecs);
}

bool rrxe_helper_timer_pending(const struct timer_list *timer)
{
	return timer_pending(timer);
}

/* Whether the timer is pending with this expiry: mod_timer()'s own lockless check. */
bool rrxe_helper_timer_pending_at(const struct timer_list *timer, unsigned long expires)
{
	return timer_pending(timer) && READ_ONCE(timer->expires) == expires;
}

/* alloc_workqueue() takes a format string: pass the name through "%s". */
struct workqueue_struct *rrxe_helper_alloc_workqueue(const char *name, unsigned int flags,
						     int max_active)
{
	return alloc_workqueue("%s", flags, max_active, name);
}
