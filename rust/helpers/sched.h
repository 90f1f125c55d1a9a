/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers for rrxe, sched area (see rrxe_helpers.h for the conventions):
 * jiffies, CPUs, the current task, timer_list and workqueues, for rust/kernel/timer.rs,
 * cpu.rs, sched.rs and workqueue.rs.
 */
#ifndef RRXE_HELPERS_SCHED_H
#define RRXE_HELPERS_SCHED_H

#include <linux/types.h>

struct timer_list;
struct workqueue_struct;

/* Time. */
unsigned long rrxe_helper_jiffies_now(void);
unsigned long rrxe_helper_usecs_to_jiffies(unsigned int usecs);

/* CPUs and tasks. */
unsigned int rrxe_helper_raw_smp_processor_id(void);
unsigned int rrxe_helper_nr_cpu_ids(void);
unsigned long rrxe_helper_current_nvcsw(void);

/* Timers. */
bool rrxe_helper_timer_pending(const struct timer_list *timer);
bool rrxe_helper_timer_pending_at(const struct timer_list *timer, unsigned long expires);

/* Workqueues. */
struct workqueue_struct *rrxe_helper_alloc_workqueue(const char *name, unsigned int flags,
						     int max_active);

#endif
