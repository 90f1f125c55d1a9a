// SPDX-License-Identifier: GPL-2.0

//! Routes for transmitted datagrams: the lookup out of a given device in its namespace
//! (`ip_route_output_key`, `ipv6_dst_lookup_flow`), [`RouteMemo`], which saves it for
//! the datagrams of a burst that go the same way, and [`KeptRoute`], which keeps a plain
//! IPv4 route from one burst to the next, as a socket keeps its `sk_dst_cache`.

use super::{device::NetDevice, xmit::IpAddrs};
use crate::{bindings, ext::sync::SpinLockBh};
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

/// A route that may be kept, and where it was looked up.
///
/// # Invariants
///
/// `route` is a plain IPv4 route out of the device it was looked up for
/// (`rrxe_helper_route_keep4`), whose reference may be released in any context, also
/// after the RCU section of its lookup and after its namespace is gone; `net` is the
/// cookie of the namespace the device was in when it was looked up (never reused).
struct Keepable {
    route: HeldRoute,
    net: u64,
}

/// The route a memo holds, by what becomes of it when the memo ends.
enum MemoRoute {
    /// Looked up by this memo, and may be kept: it goes into the sender's [`KeptRoute`].
    Keep(Keepable),
    /// The memo's own reference on the route the sender keeps, or a route that may not
    /// be kept: released.
    Release(HeldRoute),
}

impl MemoRoute {
    /// The route, whichever it is.
    fn held(&self) -> &HeldRoute {
        match self {
            MemoRoute::Keep(k) => &k.route,
            MemoRoute::Release(h) => h,
        }
    }
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

/// A route that a sender keeps from one [`RouteMemo`] to the next, so that its next
/// datagrams to the same addresses skip the route lookup while the route stays valid;
/// empty at first ([`Default`]). The sender keeps it behind a lock of its own
/// ([`RouteMemo::with`]), which only a memo that needs a route takes.
///
/// Only a plain IPv4 route to a remote unicast address out of the memo's device is kept:
/// no xfrm bundle, no tunnel encapsulation, no blackhole route, none to a local,
/// broadcast or multicast address (whose routes path MTU and redirect updates do not
/// reach). Its memory and operations are global and the kernel moves it off a device that
/// goes (`dst_dev_put`, `rt_flush_dev`), so holding it past the RCU section of its lookup,
/// and releasing it in any context (when it is replaced, or dropped with the value), even
/// after its namespace is gone, is sound. An IPv6 route (whose operations belong to its
/// namespace) and the others are looked up in every memo, as before. A memo uses a kept
/// route only if it is for the same addresses, still goes out of the memo's device, the
/// device is still in the namespace it was in then, and the route passes `dst_check` (no
/// route, rule, address, device or xfrm policy change, no path MTU or redirect exception
/// since); else it drops it and looks the route up again. rxe keeps its QPs' routes
/// likewise, in each QP's socket.
#[derive(Default)]
pub struct KeptRoute(Option<Keepable>);

// SAFETY: A kept route is one that may be released in any context and on any thread
// (`Keepable`'s type invariant; `dst_release`).
unsafe impl Send for KeptRoute {}

/// The route out of one device of the last datagram a sender sent with it, kept for its
/// next ones to the same addresses, which then skip the route lookup; released when the
/// memo goes, unless it goes to the sender's [`KeptRoute`].
///
/// A memo exists for one call of [`RouteMemo::with`] only, an RCU read-side critical
/// section which should be as short as a burst of sends (rrxe: one engine pass, under the
/// QP's lock). A route that changes meanwhile applies from the next burst on. A held route
/// that may not be kept can point into its namespace's state (IPv6, xfrm), which must not
/// go before it: a device leaves its namespace, moved (`__dev_change_net_namespace`) or
/// unregistered, with a last `synchronize_net()` after the point where a lookup there
/// could still start (the move, the `NETDEV_UNREGISTER` notifiers), which waits for the
/// section. So a route looked up in the old namespace is released before the move or
/// unregistration returns, and a namespace is dismantled only after its devices have left
/// it. The section is what makes that hold, so `f` must not sleep (rrxe's runs under a
/// spinlock).
pub struct RouteMemo<'a> {
    dev: &'a NetDevice,
    kept: &'a SpinLockBh<KeptRoute>,
    /// The route of the last datagram; into `kept` at the end if it is to be kept.
    held: Cell<Option<MemoRoute>>,
}

impl<'a> RouteMemo<'a> {
    /// Runs `f` with a memo for routes out of `dev`, which exists for the call only, in an
    /// RCU read-side critical section (`f` must not sleep). The memo takes a route that
    /// `kept` holds, if it is still valid, before it looks one up; when `f` returns, the
    /// route it looked up last goes into `kept` if it may be kept (see [`KeptRoute`]),
    /// and the memo's route is released otherwise, within the section. A memo that needs
    /// no route does not touch `kept`.
    pub fn with<R>(
        dev: &'a NetDevice,
        kept: &'a SpinLockBh<KeptRoute>,
        f: impl FnOnce(&RouteMemo<'a>) -> R,
    ) -> R {
        let rcu = RcuReadLock::new();
        let memo = RouteMemo {
            dev,
            kept,
            held: Cell::new(None),
        };
        let r = f(&memo);
        if let Some(MemoRoute::Keep(keep)) = memo.held.take() {
            let old = core::mem::replace(&mut *kept.lock(), KeptRoute(Some(keep)));
            // Released after the lock.
            drop(old);
        }
        drop(memo);
        drop(rcu);
        r
    }

    /// The device whose routes the memo keeps.
    pub fn device(&self) -> &'a NetDevice {
        self.dev
    }

    /// A referenced route out of the memo's device for `addrs`: the one held if the
    /// addresses are the same, else the kept one if it is for them and still valid, else
    /// a new lookup, held instead.
    pub(super) fn route(&self, addrs: &IpAddrs) -> Result<NonNull<bindings::dst_entry>> {
        let old = self.held.take();
        if let Some(held) = old
            .as_ref()
            .map(MemoRoute::held)
            .filter(|h| h.addrs == *addrs)
        {
            let dst = held.dst;
            // SAFETY: `held` owns a reference, so the route is live; this takes one more,
            // for the caller.
            unsafe { bindings::dst_hold(dst.as_ptr()) };
            self.held.set(old);
            return Ok(dst);
        }
        drop(old);
        let held = match self.kept_ref(addrs) {
            Some(held) => MemoRoute::Release(held),
            None => {
                // INVARIANT: the lookup's reference.
                let route = HeldRoute {
                    addrs: *addrs,
                    dst: lookup(self.dev, addrs)?,
                };
                // SAFETY: We hold a reference on the route and the device is valid; the
                // helper only reads them.
                let keep = matches!(addrs, IpAddrs::V4 { .. })
                    && unsafe { bindings::route_keep4(route.dst.as_ptr(), self.dev.as_raw()) };
                if keep {
                    // SAFETY: The device is valid.
                    let net = unsafe { bindings::dev_net_cookie(self.dev.as_raw()) };
                    // INVARIANT: `route_keep4` says the route may be kept; `net` is the
                    // cookie of its device's namespace just after the lookup, in the same
                    // RCU section (the memo's).
                    MemoRoute::Keep(Keepable { route, net })
                } else {
                    MemoRoute::Release(route)
                }
            }
        };
        let dst = held.held().dst;
        // SAFETY: `held` owns a reference on the route; this takes one more, for the
        // caller.
        unsafe { bindings::dst_hold(dst.as_ptr()) };
        self.held.set(Some(held));
        Ok(dst)
    }

    /// A reference on the route the sender keeps, if it is for `addrs` and still valid;
    /// one that is not valid any more is released.
    fn kept_ref(&self, addrs: &IpAddrs) -> Option<HeldRoute> {
        if !matches!(addrs, IpAddrs::V4 { .. }) {
            return None;
        }
        let mut kept = self.kept.lock();
        let Keepable { route, net } = kept.0.as_ref()?;
        if route.addrs != *addrs {
            return None;
        }
        // SAFETY: `route` owns a reference on the route and the device is valid; we are
        // in an RCU read-side section (the memo's), as the check needs.
        if unsafe { bindings::route_valid(route.dst.as_ptr(), self.dev.as_raw(), *net) } {
            let dst = route.dst;
            // SAFETY: `route` owns a reference, so the route is live; this takes one more.
            unsafe { bindings::dst_hold(dst.as_ptr()) };
            // INVARIANT: the reference just taken.
            return Some(HeldRoute { addrs: *addrs, dst });
        }
        let stale = kept.0.take();
        drop(kept);
        drop(stale);
        None
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
