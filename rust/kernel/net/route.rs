// SPDX-License-Identifier: GPL-2.0

//! Routes for transmitted datagrams: the lookup out of a given device in its namespace
//! (`ip_route_output_key`, `ipv6_dst_lookup_flow`), and [`RouteMemo`], which saves it for
//! the datagrams of a burst that go the same way.

use super::{device::NetDevice, xmit::IpAddrs};
use crate::bindings;
use core::{cell::Cell, marker::PhantomData, ptr::NonNull};
use kernel::prelude::*;

/// A route for `addrs`.
///
/// # Invariants
///
/// `dst` is a route (`struct dst_entry`) on which `self` owns one reference.
struct HeldRoute {
    addrs: IpAddrs,
    dst: NonNull<bindings::dst_entry>,
}

impl Drop for HeldRoute {
    fn drop(&mut self) {
        // SAFETY: `self` owns a reference on the route (type invariant).
        unsafe { bindings::dst_release(self.dst.as_ptr()) };
    }
}

/// An RCU read-side critical section, for as long as the value lives (on one CPU: it is
/// neither `Send` nor `Sync`).
struct RcuReadLock(PhantomData<*mut ()>);

impl RcuReadLock {
    fn new() -> Self {
        // SAFETY: Always allowed; ended by `drop`, in the same context.
        unsafe { bindings::rcu_read_lock() };
        RcuReadLock(PhantomData)
    }
}

impl Drop for RcuReadLock {
    fn drop(&mut self) {
        // SAFETY: Ends the section `new` began.
        unsafe { bindings::rcu_read_unlock() };
    }
}

/// The route out of one device of the last datagram a sender sent with it, kept for its
/// next ones to the same addresses, which then skip the route lookup; released when the
/// memo goes.
///
/// A memo exists for one call of [`RouteMemo::with`] only, an RCU read-side critical
/// section which should be as short as a burst of sends (rrxe: one engine pass, under the
/// QP's lock). A route that changes meanwhile applies from the next burst on. A held route
/// can point into its namespace's state (IPv6, xfrm), which must not go before it: a
/// device leaves its namespace, moved (`__dev_change_net_namespace`) or unregistered, with
/// a last `synchronize_net()` after the point where a lookup there could still start (the
/// move, the `NETDEV_UNREGISTER` notifiers), which waits for the section. So a route looked
/// up in the old namespace is released before the move or unregistration returns, and a
/// namespace is dismantled only after its devices have left it. The section is what makes
/// that hold, so `f` must not sleep (rrxe's runs under a spinlock).
pub struct RouteMemo<'a> {
    dev: &'a NetDevice,
    held: Cell<Option<HeldRoute>>,
}

impl<'a> RouteMemo<'a> {
    /// Runs `f` with a memo for routes out of `dev`, which exists for the call only, in an
    /// RCU read-side critical section (`f` must not sleep); the route it holds is released
    /// when `f` returns, within the section.
    pub fn with<R>(dev: &'a NetDevice, f: impl FnOnce(&RouteMemo<'a>) -> R) -> R {
        let rcu = RcuReadLock::new();
        let memo = RouteMemo {
            dev,
            held: Cell::new(None),
        };
        let r = f(&memo);
        drop(memo);
        drop(rcu);
        r
    }

    /// The device whose routes the memo keeps.
    pub fn device(&self) -> &'a NetDevice {
        self.dev
    }

    /// A referenced route out of the memo's device for `addrs`: the one held if the
    /// addresses are the same, else a new lookup, held instead.
    pub(super) fn route(&self, addrs: &IpAddrs) -> Result<NonNull<bindings::dst_entry>> {
        let old = self.held.take();
        if let Some(held) = old.as_ref().filter(|h| h.addrs == *addrs) {
            let dst = held.dst;
            // SAFETY: `held` owns a reference, so the route is live; this takes one more,
            // for the caller.
            unsafe { bindings::dst_hold(dst.as_ptr()) };
            self.held.set(old);
            return Ok(dst);
        }
        drop(old);
        let dst = lookup(self.dev, addrs)?;
        // SAFETY: The lookup returned a referenced route; this takes one more, for the memo.
        unsafe { bindings::dst_hold(dst.as_ptr()) };
        // INVARIANT: the reference just taken is the memo's.
        self.held.set(Some(HeldRoute { addrs: *addrs, dst }));
        Ok(dst)
    }
}

/// A referenced route out of `dev` for `addrs`, looked up in `dev`'s namespace.
fn lookup(dev: &NetDevice, addrs: &IpAddrs) -> Result<NonNull<bindings::dst_entry>> {
    let mut dst: *mut bindings::dst_entry = core::ptr::null_mut();
    // SAFETY: The device is valid; `dst` is a valid out-pointer.
    let ret = unsafe {
        match *addrs {
            IpAddrs::V4 { src, dst: daddr } => bindings::route_output4(
                dev.as_raw(),
                u32::from_ne_bytes(src),
                u32::from_ne_bytes(daddr),
                &mut dst,
            ),
            IpAddrs::V6 { src, dst: daddr } => {
                bindings::route_output6(dev.as_raw(), src.as_ptr(), daddr.as_ptr(), &mut dst)
            }
        }
    };
    kernel::error::to_result(ret)?;
    NonNull::new(dst).ok_or(EINVAL)
}
