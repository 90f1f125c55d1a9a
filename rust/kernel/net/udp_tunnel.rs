// SPDX-License-Identifier: GPL-2.0

//! UDP tunnel sockets: kernel UDP sockets whose datagrams are handed to an
//! encapsulation receive hook in softirq context.

use super::{namespace::Net, skb::SkBuff};
use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{ffi, prelude::*, sync::Arc};

/// Receives the datagrams of a [`UdpTunnelSocket`]. Runs in softirq context.
pub trait EncapRecv: Send + Sync + 'static {
    /// Called for each datagram, with the UDP header still in front of the payload.
    fn recv(&self, skb: SkBuff);
}

/// The address family of a tunnel socket.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6, IPv6-only (no IPv4-mapped traffic).
    V6,
}

/// A bound kernel UDP socket in tunnel mode; released when dropped.
///
/// # Invariants
///
/// The socket's `sk_user_data` holds a reference to a `T` (from `Arc::into_raw`), owned by
/// `self` and released after the socket.
pub struct UdpTunnelSocket<T: EncapRecv> {
    sock: NonNull<bindings::socket>,
    ctx: *const T,
    _t: PhantomData<Arc<T>>,
}

// SAFETY: The socket may be released from any process context.
unsafe impl<T: EncapRecv> Send for UdpTunnelSocket<T> {}
// SAFETY: No shared-access method touches the socket.
unsafe impl<T: EncapRecv> Sync for UdpTunnelSocket<T> {}

impl<T: EncapRecv> UdpTunnelSocket<T> {
    /// Creates a socket bound to `port` in namespace `net`, delivering to `ctx.recv`.
    ///
    /// Returns `None` if the namespace does not support the address family.
    pub fn new(net: &Net, family: Family, port: u16, ctx: Arc<T>) -> Result<Option<Self>> {
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        // SAFETY: `net` is live; `sock` is a valid out-pointer.
        let ret = unsafe {
            bindings::udp_sock_create(net.as_raw(), family == Family::V6, port.to_be(), &mut sock)
        };
        if ret == -(bindings::EAFNOSUPPORT as i32) {
            return Ok(None);
        }
        kernel::error::to_result(ret)?;
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let ctx = Arc::into_raw(ctx);
        let mut cfg = bindings::udp_tunnel_sock_cfg {
            sk_user_data: ctx.cast_mut().cast(),
            encap_type: 1,
            encap_rcv: Some(Self::encap_rcv),
            ..Default::default()
        };
        // SAFETY: `sock` was just created in `net`; `cfg` is valid for the call.
        unsafe { bindings::setup_udp_tunnel_sock(net.as_raw(), sock.as_ptr(), &mut cfg) };
        Ok(Some(Self {
            sock,
            ctx,
            _t: PhantomData,
        }))
    }

    /// C entry point `encap_rcv`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn encap_rcv(
        sk: *mut bindings::sock,
        skb: *mut bindings::sk_buff,
    ) -> ffi::c_int {
        // SAFETY: The UDP layer hands over its reference to `skb`.
        let Some(skb) = (unsafe { SkBuff::from_raw(skb) }) else {
            return 0;
        };
        // SAFETY: `sk` is our socket, receiving under RCU; its user data is the context
        // (type invariant) or null once release started.
        let ctx = unsafe { bindings::rcu_dereference_sk_user_data(sk) }.cast::<T>();
        // SAFETY: The context outlives every receive call that could see it: `drop`
        // waits for an RCU grace period after releasing the socket.
        if let Some(ctx) = unsafe { ctx.as_ref() } {
            ctx.recv(skb);
        }
        // Consumed.
        0
    }
}

impl<T: EncapRecv> Drop for UdpTunnelSocket<T> {
    fn drop(&mut self) {
        // SAFETY: The socket is ours; after release no more `encap_rcv` calls start, and
        // running ones finish before the socket memory goes (RCU).
        unsafe { bindings::udp_tunnel_sock_release(self.sock.as_ptr()) };
        // SAFETY: Receive calls run under RCU: after a grace period none uses the context,
        // and we give back the reference `new` stored.
        unsafe {
            bindings::synchronize_rcu();
            drop(Arc::from_raw(self.ctx));
        }
    }
}
