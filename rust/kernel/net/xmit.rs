// SPDX-License-Identifier: GPL-2.0

//! Building and transmitting UDP datagrams over IPv4 and IPv6 out of a given device, as
//! UDP tunnels do, with the sender writing its own headers (as `udp_tunnel_xmit_skb` would,
//! but with a last look at the finished datagram before it leaves).
//!
//! A datagram is allocated as a [`TxSkb`] with room for its headers, the caller fills the
//! UDP payload (or its start, and appends the rest as pieces of pages carried by reference,
//! [`TxSkb::push_page`], and a trailer), and [`TxSkb::send`] writes the UDP and IP headers
//! that a [`Flow`] describes (IPv4: no options, DF as asked, an ID from
//! `__ip_select_ident` unless DF, header checksum), lets the caller finish the datagram
//! with its final headers in view (e.g. a trailer computed over them), routes it out of
//! the given device in the device's namespace (a [`RouteMemo`] saves the lookup for the
//! datagrams of a burst that go the same way) and hands it to `ip_local_out` /
//! `ip6_local_out`.
//! [`TxSkb::loopback`] builds the same datagram but returns it shaped as the UDP tunnel
//! receive hook delivers it, for local delivery.
//!
//! The UDP checksum is always 0, "none" (`udp_tunnel_xmit_skb`'s `nocheck`): IPv4 allows
//! it, IPv6 for tunnel protocols that provide their own integrity check (RFC 6935). It is
//! the only mode so far; a checksumming one would come with a user.
//!
//! A [`TxOwner`] optionally counts the skbs of one sender in flight and calls
//! [`TxDone::tx_done`] when the network stack frees one.

use super::{
    device::NetDevice,
    page_piece::PagePiece,
    route::RouteMemo,
    skb::{SkBuff, IPV4_HDR_LEN, IPV6_HDR_LEN, UDP_HDR_LEN},
    udp_tunnel::Family,
};
use crate::{
    bindings,
    ext::{crc::Crc32, rdma::device::ModuleRef},
};
use core::{
    mem::ManuallyDrop,
    ptr::NonNull,
    sync::atomic::{AtomicUsize, Ordering},
};
use kernel::{prelude::*, sync::Arc};

/// The source and destination addresses of a datagram, as network-order bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IpAddrs {
    /// IPv4.
    V4 {
        /// Source address.
        src: [u8; 4],
        /// Destination address.
        dst: [u8; 4],
    },
    /// IPv6.
    V6 {
        /// Source address.
        src: [u8; 16],
        /// Destination address.
        dst: [u8; 16],
    },
}

impl IpAddrs {
    /// The address family.
    pub fn family(&self) -> Family {
        match self {
            IpAddrs::V4 { .. } => Family::V4,
            IpAddrs::V6 { .. } => Family::V6,
        }
    }
}

/// Everything but the payload that goes into the headers of a datagram.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Flow {
    /// The addresses, which also select the family.
    pub addrs: IpAddrs,
    /// UDP source port (host order).
    pub src_port: u16,
    /// UDP destination port (host order).
    pub dst_port: u16,
    /// IPv4 TOS byte or IPv6 traffic class.
    pub tos: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// IPv6 flow label (low 20 bits); ignored for IPv4.
    pub flow_label: u32,
    /// IPv4: set Don't Fragment; ignored for IPv6 (which routers never fragment).
    pub df: bool,
}

/// `IPPROTO_UDP` (an anonymous enum in `include/uapi/linux/in.h`, which bindgen does not
/// bind): the IANA protocol number of UDP.
const IPPROTO_UDP: u8 = 17;

/// An error code that 6.12's `kernel::error::code` lacks.
fn errno(code: u32) -> Error {
    Error::from_errno(-(code as i32))
}

/// The length of the IP header this module writes for `family`.
fn ip_hdr_len(family: Family) -> usize {
    match family {
        Family::V4 => IPV4_HDR_LEN,
        Family::V6 => IPV6_HDR_LEN,
    }
}

/// An IP/UDP datagram being built; freed if dropped unsent.
///
/// # Invariants
///
/// `skb` is a valid skb that we own, allocated by [`TxSkb::alloc`]; its linear data is
/// the `payload_len`-byte start of the UDP payload at `payload` (zeroed at allocation),
/// with room for the UDP and IP headers (and the link layer) in front of it. Its
/// `pages` first fragments hold `paged_len` bytes of page pieces ([`TxSkb::push_page`]);
/// if `trailer` is set, one more fragment holds its bytes, ours to write, and nothing
/// follows it. `payload_len + paged_len` plus the trailer's length fit the 16-bit length
/// fields with the headers. `skb->dev` is not set (no device reference). `skb->sk` is
/// null unless `owned` ([`TxSkb::set_owner`]).
pub struct TxSkb {
    skb: NonNull<bindings::sk_buff>,
    payload: NonNull<u8>,
    payload_len: usize,
    pages: u32,
    paged_len: usize,
    trailer: Option<(NonNull<u8>, usize)>,
    family: Family,
    owned: bool,
}

// SAFETY: An owned skb may be used and freed in any context.
unsafe impl Send for TxSkb {}

/// The callback that finishes a datagram: it gets the IP header and the UDP header as they
/// go on the wire and the UDP payload, e.g. to write a trailer computed over them.
pub trait Finish: FnOnce(&[u8], &[u8], &mut Body<'_>) {}
impl<F: FnOnce(&[u8], &[u8], &mut Body<'_>)> Finish for F {}

/// The UDP payload of a datagram as [`Finish`] sees it: the linear start, the page pieces
/// (read only: their owner may write them meanwhile) and the trailer, in that order.
pub struct Body<'a> {
    head: &'a mut [u8],
    skb: &'a TxSkb,
    /// Where the page pieces start, from `skb->data`.
    pages_at: usize,
    trailer: Option<&'a mut [u8]>,
}

impl Body<'_> {
    /// The linear start of the payload (all of it, if it has no pages).
    pub fn head(&mut self) -> &mut [u8] {
        self.head
    }

    /// Continues the CRC-32 `crc` with `engine` over the page pieces, in order.
    pub fn crc32_pages(&self, engine: &Crc32, crc: u32) -> u32 {
        // Both within `u16::MAX` (type invariant).
        let (at, len) = (self.pages_at as i32, self.skb.paged_len as i32);
        // SAFETY: The transform and the skb are valid; the `paged_len` bytes after the skb's
        // linear data are the pieces, pages we hold references on (type invariant), which
        // the helper maps to read.
        unsafe { bindings::skb_crc32(engine.as_raw(), self.skb.skb.as_ptr(), at, len, crc) }
    }

    /// The trailer, if one was added ([`TxSkb::push_trailer`]).
    pub fn trailer(&mut self) -> Option<&mut [u8]> {
        self.trailer.as_deref_mut()
    }
}

impl TxSkb {
    /// Allocates a datagram of family `family` with a zeroed UDP payload of `len` bytes
    /// (`GFP_ATOMIC`), with headroom for the link layer of `dev` and the IP and UDP
    /// headers.
    ///
    /// Fails with `EMSGSIZE` if the datagram would not fit the 16-bit length fields, and
    /// `ENOMEM`.
    pub fn alloc(dev: &NetDevice, family: Family, len: usize) -> Result<TxSkb> {
        Self::alloc_gfp(dev, family, len, false)
    }

    /// As [`Self::alloc`], but without the atomic or emergency reserves and without a
    /// warning when memory is short (`GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC`): for
    /// a datagram the caller can do without (it sends its payload another way then).
    pub fn try_alloc(dev: &NetDevice, family: Family, len: usize) -> Result<TxSkb> {
        Self::alloc_gfp(dev, family, len, true)
    }

    /// [`Self::alloc`], or [`Self::try_alloc`] if `nowait`.
    fn alloc_gfp(dev: &NetDevice, family: Family, len: usize, nowait: bool) -> Result<TxSkb> {
        let hdr_len = ip_hdr_len(family) + UDP_HDR_LEN;
        if len > usize::from(u16::MAX) - hdr_len {
            return Err(errno(bindings::EMSGSIZE));
        }
        let protocol = match family {
            Family::V4 => bindings::ETH_P_IP,
            Family::V6 => bindings::ETH_P_IPV6,
        };
        let mut payload = core::ptr::null_mut();
        // SAFETY: The device is valid; `payload` is a valid out-pointer. The sizes cannot
        // overflow: `len + hdr_len` fits 16 bits (above), the link layer's space is small.
        let skb = unsafe {
            bindings::alloc_tx_skb(
                dev.as_raw(),
                hdr_len as u32,
                len as u32,
                nowait,
                protocol as u16,
                &mut payload,
            )
        };
        let skb = NonNull::new(skb).ok_or(ENOMEM)?;
        Ok(TxSkb {
            skb,
            // The helper sets it to the start of the appended area, never null.
            payload: NonNull::new(payload.cast()).unwrap_or(NonNull::dangling()),
            payload_len: len,
            pages: 0,
            paged_len: 0,
            trailer: None,
            family,
            owned: false,
        })
    }

    /// Whether `more` bytes of payload still fit the 16-bit length fields.
    fn fits(&self, more: usize) -> bool {
        let hdr_len = ip_hdr_len(self.family) + UDP_HDR_LEN;
        let trailer = self.trailer.map_or(0, |(_, n)| n);
        hdr_len + self.payload_len + self.paged_len + trailer + more <= usize::from(u16::MAX)
    }

    /// Appends `piece` to the payload by reference: the skb takes over its page reference
    /// and the network stack reads the page when it sends the datagram, not now. The
    /// fragment is marked shared (`SKBFL_SHARED_FRAG`), so nothing in the stack writes it in
    /// place. Gives the piece back if a trailer was added, only the last fragment is left
    /// (kept for [`Self::push_trailer`]) or the datagram would be too long.
    pub fn push_page(&mut self, piece: PagePiece) -> Result<(), PagePiece> {
        if self.trailer.is_some() || !self.fits(piece.len()) {
            return Err(piece);
        }
        let len = piece.len();
        let (page, off, n) = piece.into_raw();
        // SAFETY: The skb is ours; the page reference is handed over (the skb puts it when
        // freed) if the helper takes it, and otherwise rebuilt below.
        if unsafe { bindings::skb_add_page(self.skb.as_ptr(), page.as_ptr(), off, n) } {
            self.pages += 1;
            self.paged_len += len;
            Ok(())
        } else {
            // SAFETY: The helper did not take the reference: it is ours again, with the
            // range the piece had.
            Err(unsafe { PagePiece::from_raw(page, off, n) })
        }
    }

    /// The bytes of the page pieces appended so far.
    pub fn paged_len(&self) -> usize {
        self.paged_len
    }

    /// Appends a zeroed trailer of `len` bytes (at most 64) after the page pieces, which
    /// [`Finish`] writes (e.g. a check value over the pages). At most one.
    ///
    /// Fails with `EBUSY` if there is one already, `EMSGSIZE` if the datagram would be too
    /// long or `len` is 0 or above 64, and `ENOMEM` (also if no fragment is left, which
    /// [`Self::push_page`] prevents).
    pub fn push_trailer(&mut self, len: usize) -> Result {
        if self.trailer.is_some() {
            return Err(EBUSY);
        }
        if len == 0 || len > 64 || !self.fits(len) {
            return Err(errno(bindings::EMSGSIZE));
        }
        // SAFETY: The skb is ours; the helper returns null or `len` zeroed bytes in a new
        // fragment that the skb owns.
        let p = unsafe { bindings::skb_add_trailer(self.skb.as_ptr(), len as u32) };
        let p = NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?;
        self.trailer = Some((p, len));
        Ok(())
    }

    /// The linear start of the UDP payload (all of it without page pieces), zeroed at
    /// allocation.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        // SAFETY: By the type invariant `payload` points to `payload_len` initialised bytes
        // of the skb we own; `&mut self` makes the borrow exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.payload.as_ptr(), self.payload_len) }
    }

    /// Counts the datagram in `owner`'s skbs in flight until the skb is freed (by the
    /// stack after transmission, or as an [`SkBuff`] after [`Self::loopback`]), then calls
    /// [`TxDone::tx_done`]. At most one owner: a second call replaces nothing and returns
    /// `EBUSY`.
    pub fn set_owner<T: TxDone>(&mut self, owner: &TxOwner<T>) -> Result {
        if self.owned {
            return Err(EBUSY);
        }
        self.owned = true;
        // The skb's reference on the shared state, given back by `TxOwner::destructor`.
        let _ = Arc::into_raw(owner.shared.clone());
        owner.shared.in_flight.fetch_add(1, Ordering::SeqCst);
        // SAFETY: The skb is ours and has no owner yet; `owner.sk` is a live socket whose
        // user data is the shared state (the pointer `into_raw` just returned); the helper
        // takes a socket reference that the destructor drops.
        unsafe {
            bindings::skb_set_owner(
                self.skb.as_ptr(),
                owner.sk.as_ptr(),
                Some(TxOwner::<T>::destructor),
            );
        }
        Ok(())
    }

    /// Frees the datagram unsent as consumed, not dropped (`consume_skb`): for a sender that
    /// sends its payload another way, so that the drop tracepoint sees no packet lost.
    pub fn discard(self) {
        // SAFETY: We own the skb; `into_raw` gives it up without freeing it.
        unsafe { bindings::consume_skb(self.into_raw()) };
    }

    /// Gives up the skb (freeing it becomes the caller's job).
    fn into_raw(self) -> *mut bindings::sk_buff {
        ManuallyDrop::new(self).skb.as_ptr()
    }

    /// Writes the UDP and IP headers of `flow` in front of the payload and calls `finish`.
    fn build(&mut self, dev: &NetDevice, flow: &Flow, finish: impl Finish) -> Result {
        if flow.addrs.family() != self.family {
            return Err(EINVAL);
        }
        let skb = self.skb.as_ptr();
        let ip_len = ip_hdr_len(self.family);
        let trailer_len = self.trailer.map_or(0, |(_, n)| n);
        // Checked against `u16::MAX` in `alloc`, `push_page` and `push_trailer`.
        let udp_len = (UDP_HDR_LEN + self.payload_len + self.paged_len + trailer_len) as u16;
        // SAFETY: The skb is ours; the helper pushes the headers if the headroom has room
        // for them (it has: type invariant) and returns their start, or null.
        let hdr = unsafe {
            bindings::skb_push_headers(skb, UDP_HDR_LEN as u32, ip_len as u32).cast::<u8>()
        };
        if hdr.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `hdr` is the start of the skb's data, `ip_len + UDP_HDR_LEN` bytes of
        // headroom just pushed, then the payload (initialised); ours. The pushed bytes are
        // written before anything reads them.
        unsafe {
            // One constant length per family: stores, not a call to memset.
            match self.family {
                Family::V4 => hdr.write_bytes(0, IPV4_HDR_LEN + UDP_HDR_LEN),
                Family::V6 => hdr.write_bytes(0, IPV6_HDR_LEN + UDP_HDR_LEN),
            }
        }
        // SAFETY: `hdr` is the start of the skb's data, the headers' bytes we just zeroed,
        // then the payload: all initialised and ours.
        let packet = unsafe {
            core::slice::from_raw_parts_mut(hdr, ip_len + UDP_HDR_LEN + self.payload_len)
        };
        match flow.addrs {
            IpAddrs::V4 { src, dst } => {
                let ip = &mut packet[..IPV4_HDR_LEN];
                ip[0] = 0x45; // Version 4, 5 words.
                ip[1] = flow.tos;
                ip[2..4].copy_from_slice(&(udp_len + IPV4_HDR_LEN as u16).to_be_bytes());
                if flow.df {
                    ip[6..8].copy_from_slice(&(bindings::IP_DF as u16).to_be_bytes());
                }
                ip[8] = flow.ttl;
                ip[9] = IPPROTO_UDP;
                ip[12..16].copy_from_slice(&src);
                ip[16..20].copy_from_slice(&dst);
                let iph = ip.as_mut_ptr().cast::<bindings::iphdr>();
                // The ID: 0 for a datagram that may not be fragmented, whose ID means
                // nothing (RFC 6864), as `ip_select_ident` gives an unconnected socket's
                // (nothing sets this skb's `ignore_df`); else the hashed counter (a
                // siphash per datagram).
                if !flow.df {
                    // SAFETY: `iph` points to the complete IPv4 header (alignment: the
                    // kernel reads it as `struct iphdr` too); the device's namespace is
                    // live.
                    unsafe { bindings::__ip_select_ident(dev.net_raw(), iph, 1) };
                }
                // SAFETY: `iph` points to the complete IPv4 header, as above.
                unsafe { bindings::ip_send_check(iph) };
            }
            IpAddrs::V6 { src, dst } => {
                let ip = &mut packet[..IPV6_HDR_LEN];
                let word = (6 << 28) | (u32::from(flow.tos) << 20) | (flow.flow_label & 0xfffff);
                ip[0..4].copy_from_slice(&word.to_be_bytes());
                ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
                ip[6] = IPPROTO_UDP;
                ip[7] = flow.ttl;
                ip[8..24].copy_from_slice(&src);
                ip[24..40].copy_from_slice(&dst);
            }
        }
        let pages_at = packet.len();
        let (ip, rest) = packet.split_at_mut(ip_len);
        let (udp, head) = rest.split_at_mut(UDP_HDR_LEN);
        udp[0..2].copy_from_slice(&flow.src_port.to_be_bytes());
        udp[2..4].copy_from_slice(&flow.dst_port.to_be_bytes());
        udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
        // The checksum (6..8) stays 0: none (see the module documentation).
        let trailer = self.trailer.map(|(p, n)| {
            // SAFETY: By the type invariant the trailer's `n` bytes are ours, initialised,
            // and apart from the linear data; `self` is borrowed for as long.
            unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), n) }
        });
        finish(
            ip,
            udp,
            &mut Body {
                head,
                skb: &*self,
                pages_at,
                trailer,
            },
        );
        Ok(())
    }

    /// Builds the datagram (see the module documentation), calls `finish` with its headers
    /// and payload, routes it out of `memo`'s device in that device's namespace (with the
    /// route the memo holds, if it is for the same addresses) and transmits it. The skb is
    /// consumed in every case.
    ///
    /// Errors: `EINVAL` if `flow` is of another family than the skb; the route lookup's
    /// error (`ENETUNREACH`, `EHOSTUNREACH`, ...; `finish` is then not called); the error
    /// of the IP output path (e.g. `EMSGSIZE` above the path MTU with DF set);
    /// `ENOBUFS` if a queue or device dropped the packet (`NET_XMIT_DROP`). Congestion
    /// notification (`NET_XMIT_CN`) counts as sent.
    pub fn send(mut self, memo: &RouteMemo<'_>, flow: &Flow, finish: impl Finish) -> Result {
        if flow.addrs.family() != self.family {
            return Err(EINVAL);
        }
        let dev = memo.device();
        let skb = self.skb.as_ptr();
        let dst = memo.route(&flow.addrs)?;
        // SAFETY: `dst` is a referenced route, which the skb takes over (released with the
        // skb).
        unsafe { bindings::skb_dst_set(skb, dst.as_ptr()) };
        self.build(dev, flow, finish)?;
        // The stack does not reference-count `skb->dev`; the route holds the device.
        // SAFETY: The skb is ours and the device valid.
        unsafe { bindings::skb_set_dev(skb, dev.as_raw()) };
        let family = self.family;
        let skb = self.into_raw();
        // SAFETY: The skb is complete, routed and handed over (the output functions consume
        // it whatever they return); the namespace is the device's, which is live; `sk` is
        // null or the owner's socket, which the skb holds a reference on.
        let ret = unsafe {
            let sk = bindings::skb_sk(skb);
            match family {
                Family::V4 => bindings::ip_local_out(dev.net_raw(), sk, skb),
                Family::V6 => bindings::ip6_local_out(dev.net_raw(), sk, skb),
            }
        };
        match ret {
            0 => Ok(()),
            r if r < 0 => Err(Error::from_errno(r)),
            r if r == bindings::NET_XMIT_CN as i32 => Ok(()),
            _ => Err(errno(bindings::ENOBUFS)),
        }
    }

    /// Builds the datagram exactly as [`Self::send`] would (without routing it) and calls
    /// `finish`, then returns it as a UDP tunnel's `encap_rcv` would receive it on `dev`:
    /// network and transport headers set, data at the UDP header, `skb->dev` = `dev`,
    /// `skb->protocol` set. For a destination on the sending host itself.
    ///
    /// Errors: `EINVAL` if `flow` is of another family than the skb (which is freed).
    pub fn loopback(mut self, dev: &NetDevice, flow: &Flow, finish: impl Finish) -> Result<SkBuff> {
        self.build(dev, flow, finish)?;
        let skb = ManuallyDrop::new(self).skb;
        // SAFETY: The skb is ours; its data starts with the IP header of the length pulled.
        // Nobody else writes its linear data; its page pieces are a sender's pages, which
        // `from_raw_held` allows. The device is valid for the call; the helper sets
        // `skb->dev` to it with a reference that `from_raw_held` takes over.
        unsafe {
            bindings::skb_loop_in(
                skb.as_ptr(),
                ip_hdr_len(flow.addrs.family()) as u32,
                dev.as_raw(),
            );
            Ok(SkBuff::from_raw_held(skb))
        }
    }
}

impl Drop for TxSkb {
    fn drop(&mut self) {
        // SAFETY: We own the skb.
        unsafe { bindings::kfree_skb(self.skb.as_ptr()) };
    }
}

/// What a [`TxOwner`] tells when the stack frees one of its skbs.
pub trait TxDone: Send + Sync + 'static {
    /// Called when one of the owner's skbs has been freed; `in_flight` is the number still
    /// outstanding. Runs in any context the stack frees skbs in, including softirq (never
    /// with hard interrupts disabled by us): must not sleep or take non-BH-safe locks.
    fn tx_done(&self, in_flight: usize);
}

/// The state a [`TxOwner`] shares with its skbs in flight.
struct TxShared<T> {
    in_flight: AtomicUsize,
    data: T,
    /// Dropped last (fields drop in order), after `data`.
    _module: ModuleRef,
}

/// Counts the skbs of one sender in flight, as a socket's send buffer accounting does: each
/// skb given to [`TxSkb::set_owner`] points at the owner's kernel socket (`skb->sk`) with a
/// destructor that decrements the count and calls [`TxDone::tx_done`].
///
/// Every skb in flight holds a reference on the socket and on the shared state, so both
/// outlive the `TxOwner` if needed; the last reference may therefore drop `T` in softirq
/// context. The destructor is code of this module, so the shared state holds a
/// [`ModuleRef`], dropped by the last reference as the destructor's last action: skbs of
/// the owner in flight, even after the `TxOwner` is gone, keep the module loaded.
pub struct TxOwner<T: TxDone> {
    sock: NonNull<bindings::socket>,
    sk: NonNull<bindings::sock>,
    shared: Arc<TxShared<T>>,
}

// SAFETY: The socket is only released (process context) and its `sock` passed to skbs;
// `T` is `Send + Sync`.
unsafe impl<T: TxDone> Send for TxOwner<T> {}
// SAFETY: Shared access only reads the atomic count and clones the `Arc`.
unsafe impl<T: TxDone> Sync for TxOwner<T> {}

impl<T: TxDone> TxOwner<T> {
    /// A new owner with no skbs in flight, keeping the module loaded through `module` while
    /// it or any of its skbs exists. Process context (creates a kernel socket).
    pub fn new(data: T, module: ModuleRef) -> Result<Self> {
        let shared = Arc::new(
            TxShared {
                in_flight: AtomicUsize::new(0),
                data,
                _module: module,
            },
            GFP_KERNEL,
        )?;
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        // The socket's user data: the shared state, not owning (see `set_owner`).
        let user = core::ptr::from_ref::<TxShared<T>>(&shared)
            .cast_mut()
            .cast();
        // SAFETY: `sock` is a valid out-pointer; `user` stays valid while the socket can
        // have skbs (each holds a reference on `shared`) or the owner lives.
        kernel::error::to_result(unsafe { bindings::owner_sock_create(&mut sock, user) })?;
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        // SAFETY: A created socket has its `sock`.
        let sk = NonNull::new(unsafe { bindings::socket_sk(sock.as_ptr()) }).ok_or(ENOMEM)?;
        Ok(Self { sock, sk, shared })
    }

    /// The owner's data.
    pub fn data(&self) -> &T {
        &self.shared.data
    }

    /// The number of skbs in flight.
    ///
    /// The count changes with sequentially consistent atomics, and `tx_done` is called after
    /// the decrement: a sender that stops at a high mark can set a flag of its own, then
    /// read the count again, without missing the `tx_done` that finds the flag set.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// The skb destructor.
    ///
    /// # Safety
    ///
    /// Only called by the stack when freeing an skb that [`TxSkb::set_owner`] gave this
    /// destructor, with `skb->sk` still the owner's socket.
    unsafe extern "C" fn destructor(skb: *mut bindings::sk_buff) {
        let mut sk = core::ptr::null_mut();
        // SAFETY: `skb` is being freed and `skb->sk` is the owner's socket, kept alive by
        // the skb's socket reference; `sk` is a valid out-pointer. The socket's user data
        // is the `TxShared<T>` pointer of `Arc::into_raw`.
        let shared = unsafe { bindings::skb_owner_data(skb, &mut sk) }.cast::<TxShared<T>>();
        // SAFETY: `set_owner` gave the skb a reference on the shared state, taken back here
        // and dropped at the end of this function.
        let shared = unsafe { Arc::from_raw(shared) };
        let left = shared
            .in_flight
            .fetch_sub(1, Ordering::SeqCst)
            .saturating_sub(1);
        shared.data.tx_done(left);
        // SAFETY: The socket reference `set_owner` took for this skb.
        unsafe { bindings::sock_put(sk) };
        // Last access to the module's data: the shared state may hold the last `ModuleRef`
        // (see there for the code that runs after it).
        drop(shared);
    }
}

impl<T: TxDone> Drop for TxOwner<T> {
    fn drop(&mut self) {
        // SAFETY: The socket is ours; skbs in flight keep its `sock` alive (and the shared
        // state) through their own references.
        unsafe { bindings::sock_release(self.sock.as_ptr()) };
    }
}
