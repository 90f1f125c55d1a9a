// SPDX-License-Identifier: GPL-2.0

//! Which task last rang a stream's doorbell on each CPU, when, and whether it polls:
//! whether clients that post ahead and poll keep every CPU busy, where a QP's work item
//! could only run instead of one of them, not beside it ([`crate::task`],
//! `QpShared::ring`).
//!
//! One table for the module, not one per device: the CPUs are the machine's, whichever
//! device (or network namespace) a client posts to. A task counts only while it polls:
//! between its last two doorbells it did not sleep, so it holds its CPU (a user who keeps
//! another CPU so occupied costs the others that CPU with or without this table; one whose
//! thread rings now and then and sleeps does not count).

use crate::ext::{cpu, sched, timer};
use core::sync::atomic::{AtomicU64, Ordering};

/// CPUs with a slot: on a machine with more CPUs online, none counts as kept busy (its
/// work items run as without this table).
const SLOTS: usize = 64;

/// How long after its last doorbell a task still counts as keeping its CPU busy
/// (microseconds): a polling client rings many times in that, one that sends 8 MiB
/// messages a few, one on a debug kernel's slow path too. Also how long a stream goes on
/// running in its caller once the other CPUs' clients have stopped.
const RECENT_US: u32 = 20_000;

/// One CPU's last stream doorbell. Written by doorbells on that CPU, read by doorbells on
/// the others; the two words are not read as one, and a race only misplaces one
/// doorbell's pass.
struct Slot {
    /// The jiffy it was rung in (the high half, wrapping) and the task's ID (the low half,
    /// never 0 for a user task); 0 for none.
    stamp: AtomicU64,
    /// The task's count of sleeps ([`sched::voluntary_switches`]) then, shifted left by one,
    /// and in the low bit whether the doorbell before it on this CPU was the same task's,
    /// with the same count: the task polled in between.
    sleeps: AtomicU64,
}

static POSTERS: [Slot; SLOTS] = [const {
    Slot {
        stamp: AtomicU64::new(0),
        sleeps: AtomicU64::new(0),
    }
}; SLOTS];

/// Notes that the calling task rings a stream's doorbell on its CPU, and returns whether
/// each other of the `online` CPUs ([`cpu::num_online`]) has another task that polls and
/// rang one within [`RECENT_US`], or is one of `others` CPUs known to be kept busy
/// otherwise (by a receiver that polls, `QpShared::peer_polls`): every CPU runs a client
/// that polls, so a QP's work item would take the CPU from one of them. A task that moved
/// to another CPU within that time may count twice meanwhile, and so may a receiver that
/// also rings doorbells (which matters from three CPUs up). Process context (a
/// doorbell's system call).
pub(crate) fn crowded(online: u32, others: usize) -> bool {
    let online = online as usize;
    let ids = (cpu::nr_ids() as usize).min(SLOTS);
    let me = cpu::current_hint() as usize;
    if online < 2 || online > ids || me >= ids {
        return false;
    }
    let mine = &POSTERS[me];
    // The low 32 bits of both: a PID fits, and jiffies are compared wrapping.
    let now = timer::now() as u32;
    let recent = timer::usecs_to_jiffies(RECENT_US) as u32;
    let pid = sched::current_pid() as u32;
    let switches = sched::voluntary_switches() & (u64::MAX >> 1);
    let stamp = (u64::from(now) << 32) | u64::from(pid);
    let old = mine.stamp.load(Ordering::Relaxed);
    let old_sleeps = mine.sleeps.load(Ordering::Relaxed);
    let polled = old as u32 == pid && old_sleeps >> 1 == switches;
    let sleeps = (switches << 1) | u64::from(polled);
    // Stored only when they change (the stamp once a jiffy for a client that polls on its
    // CPU): the other CPUs read them.
    if old != stamp {
        mine.stamp.store(stamp, Ordering::Relaxed);
    }
    if old_sleeps != sleeps {
        mine.sleeps.store(sleeps, Ordering::Relaxed);
    }
    let busy = POSTERS[..ids]
        .iter()
        .enumerate()
        .filter(|&(cpu, slot)| {
            let v = slot.stamp.load(Ordering::Relaxed);
            let (when, who) = ((v >> 32) as u32, v as u32);
            // From `recent` jiffies ago up to one ahead (stamped after this caller read
            // the time).
            let fresh = now.wrapping_sub(when).wrapping_add(1) <= recent + 1;
            cpu != me
                && who != 0
                && who != pid
                && fresh
                && slot.sleeps.load(Ordering::Relaxed) & 1 == 1
        })
        .count();
    busy + others + 1 >= online
}
