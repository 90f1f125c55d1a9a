// SPDX-License-Identifier: GPL-2.0

//! UDP tunnel sockets: kernel UDP sockets whose datagrams are handed to an
//! encapsulation receive hook in softirq context.

use super::{namespace::Net, skb::SkBuff};
use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{ffi, prelude::*};

/// Receives the datagrams of a [`UdpTunnelSocket`]. Runs in softirq context.
pub trait EncapRecv: 'static {
    /// Called for each datagram, with the UDP header still in front of the payload.
    fn recv(skb: SkBuff);
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
pub struct UdpTunnelSocket<T: EncapRecv> {
    sock: NonNull<bindings::socket>,
    _t: PhantomData<T>,
}

// SAFETY: The socket may be released from any process context.
unsafe impl<T: EncapRecv> Send for UdpTunnelSocket<T> {}
// SAFETY: No shared-access method touches the socket.
unsafe impl<T: EncapRecv> Sync for UdpTunnelSocket<T> {}

impl<T: EncapRecv> UdpTunnelSocket<T> {
    /// Creates a socket bound to `port` in namespace `net`, delivering to `T::recv`.
    ///
    /// Returns `None` if the namespace does not support the address family.
    pub fn new(net: &Net, family: Family, port: u16) -> Result<Option<Self>> {
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
        let mut cfg = bindings::udp_tunnel_sock_cfg {
            encap_type: 1,
            encap_rcv: Some(Self::encap_rcv),
            ..Default::default()
        };
        // SAFETY: `sock` was just created in `net`; `cfg` is valid for the call.
        unsafe { bindings::setup_udp_tunnel_sock(net.as_raw(), sock.as_ptr(), &mut cfg) };
        Ok(Some(Self {
            sock,
            _t: PhantomData,
        }))
    }

    /// C entry point `encap_rcv`.
    ///
    /// # Safety
    ///
    /// Only called by the C core, with the arguments its contract for this callback promises.
    unsafe extern "C" fn encap_rcv(
        _sk: *mut bindings::sock,
        skb: *mut bindings::sk_buff,
    ) -> ffi::c_int {
        // SAFETY: The UDP layer hands over its reference to `skb`.
        if let Some(skb) = unsafe { SkBuff::from_raw(skb) } {
            T::recv(skb);
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
    }
}
