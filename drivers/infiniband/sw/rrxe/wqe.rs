// SPDX-License-Identifier: GPL-2.0

//! Work queue elements as the rxe ABI lays them out in the shared queues
//! (`struct rxe_send_wqe`, `struct rxe_recv_wqe`), decoded into validated kernel copies.
//!
//! The queue memory is writable by userspace at any time: a WQE is copied out once, checked
//! (opcode, SGE count, lengths) and used from the copy; only inline data, which is payload,
//! is read from the queue when it is sent, within the length the copy holds. Only the
//! fields the ABI defines as inputs are read; the progress fields rxe keeps inside the WQE
//! are kept privately.

use crate::{
    ext::rdma::{
        ah::RoceAv,
        mr::KernelMem,
        rxe_abi::{self, RecvWqeRaw, SendWqeRaw},
        shared::SharedMem,
        types::SendFlags,
        wr::{RecvWr, SendWr, WrSge},
    },
    params,
    proto::verbs::{WcStatus, WrOpcode},
    queue::{FromClient, Producer},
};
use kernel::prelude::*;

/// Most SGEs a WQE may name.
pub(crate) const MAX_SGE: usize = params::MAX_SGE as usize;
/// Bytes of inline data a send WQE may carry.
pub(crate) const MAX_INLINE: usize = params::MAX_INLINE_DATA as usize;
/// The size of one SGE (`struct rxe_sge`).
pub(crate) const SGE_SIZE: usize = rxe_abi::SGE_SIZE;
const _: () = assert!(MAX_INLINE == MAX_SGE * SGE_SIZE);
/// Where the SGEs (or inline data) of a send WQE start.
const SEND_SGE_OFF: usize = off::SEND_SGES;
/// Where the SGEs of a receive WQE start.
const RECV_SGE_OFF: usize = off::RECV_SGES;

/// `IB_SEND_*` flags.
pub(crate) const SEND_FENCE: u32 = SendFlags::FENCE.bits();
pub(crate) const SEND_SIGNALED: u32 = SendFlags::SIGNALED.bits();
pub(crate) const SEND_SOLICITED: u32 = SendFlags::SOLICITED.bits();
pub(crate) const SEND_INLINE: u32 = SendFlags::INLINE.bits();

/// One scatter/gather element.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Sge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

/// The decoded SGEs of a WQE: a list allocated once, with room for as many as its queue
/// allows (the QP's or SRQ's `max_sge`), and filled in place for each WQE.
pub(crate) struct SgeList {
    /// As many entries as there is room for; the first `n` are the WQE's.
    room: KVec<Sge>,
    n: usize,
}

impl SgeList {
    /// An empty list with room for `max` SGEs (at most [`MAX_SGE`]).
    pub(crate) fn new(max: u32) -> Result<Self> {
        let max = (max as usize).min(MAX_SGE);
        let mut room = KVec::with_capacity(max, GFP_KERNEL)?;
        for _ in 0..max {
            room.push(Sge::default(), GFP_KERNEL)?;
        }
        Ok(SgeList { room, n: 0 })
    }

    /// The SGEs.
    pub(crate) fn sges(&self) -> &[Sge] {
        self.room.get(..self.n).unwrap_or(&[])
    }

    /// Total bytes.
    pub(crate) fn len(&self) -> u64 {
        self.sges().iter().map(|s| u64::from(s.length)).sum()
    }

    /// Empties the list.
    fn clear(&mut self) {
        self.n = 0;
    }
}

/// Why a WQE is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WqeError {
    /// An opcode the ABI does not have or this QP cannot use.
    Opcode,
    /// Too many SGEs, too much inline data, or lengths that overflow.
    Length,
}

/// The remote side of an operation.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Remote {
    pub(crate) addr: u64,
    pub(crate) rkey: u32,
    /// Atomics: compare (CMP_SWAP) or add (FETCH_ADD) value.
    pub(crate) compare_add: u64,
    /// Atomics: swap value.
    pub(crate) swap: u64,
    /// FLUSH: placement type (`IB_FLUSH_GLOBAL`, `IB_FLUSH_PERSISTENT`) and selectivity
    /// level (`IB_FLUSH_RANGE`, `IB_FLUSH_MR`), as librxe and rxe's `feth_init` use them
    /// (the range's length is the WQE's DMA length, as librxe's `wr_flush` writes it).
    pub(crate) flush_type: u8,
    pub(crate) flush_level: u8,
}

/// UD addressing of a send WQE, as the WQE holds it.
pub(crate) type Ud = rxe_abi::UdFields;

/// A memory window bind (or, for a kernel REG_MR, the registration), as the WQE holds it.
pub(crate) type Bind = rxe_abi::MwFields;

/// A validated copy of a send WQE, decoded in place ([`read_send`]).
pub(crate) struct SendWqe {
    pub(crate) wr_id: u64,
    pub(crate) op: WrOpcode,
    pub(crate) flags: u32,
    /// Immediate data (as on the wire) or the rkey to invalidate.
    pub(crate) ex: u32,
    pub(crate) remote: Remote,
    pub(crate) ud: Ud,
    /// The address vector a kernel consumer's UD request carries.
    pub(crate) av: Option<RoceAv>,
    pub(crate) bind: Bind,
    /// Message length: the data's length (8 for ATOMIC WRITE, the range for FLUSH).
    pub(crate) len: u32,
    /// The data is the `len` bytes inline in the WQE (ATOMIC WRITE's too), which are read
    /// from the queue when they are sent ([`read_inline`]); else it is in `sges`.
    pub(crate) inline: bool,
    pub(crate) sges: SgeList,
}

impl SendWqe {
    /// An empty copy with room for `max_sge` SGEs, for [`read_send`] to fill.
    pub(crate) fn new(max_sge: u32) -> Result<Self> {
        Ok(SendWqe {
            wr_id: 0,
            op: WrOpcode::Send,
            flags: 0,
            ex: 0,
            remote: Remote::default(),
            ud: Ud::default(),
            av: None,
            bind: Bind::default(),
            len: 0,
            inline: false,
            sges: SgeList::new(max_sge)?,
        })
    }

    /// Whether the WQE asked for solicited events.
    pub(crate) fn solicited(&self) -> bool {
        self.flags & SEND_SOLICITED != 0
    }

    /// Whether it asked for a fence.
    pub(crate) fn fence(&self) -> bool {
        self.flags & SEND_FENCE != 0
    }
}

/// What the first send of a WQE decided from it: its PSNs, completion and remote range.
/// The WQE stays in user-writable memory while it is in flight; when it is read again (to
/// be sent again, or to store response data) it must still say the same, or it is
/// completed in error. SGE addresses and keys read again are checked again where they are
/// used (lkey, PD and range checks), as on the first send.
///
/// What the engine acts on is kept exactly (opcode, length, SGE count, the first SGE, the
/// remote range). The fields it only passes on (flags, immediate data or key to
/// invalidate, atomic operands, flush fields) are kept as a digest, which catches an
/// accidental rewrite of them but for a 2^-32 chance. It is not keyed, so a client can
/// find a rewrite it misses, and gains nothing by it: the fields only shape what is sent
/// and whether the completion is signaled (the track is remade from the WQE read again),
/// so it sends what it could have posted; and an inline WQE has no SGE while another of
/// the same non-zero length has one at least. A shape is small because the engine keeps
/// one per send queue slot ([`crate::eng::Track`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) op: WrOpcode,
    sges: u8,
    pub(crate) len: u32,
    /// The first SGE (none: zero): where the response of a WQE that has exactly one goes
    /// ([`Shape::sge`]); compared too, so a WQE of several SGEs whose first is rewritten
    /// is refused when read again, like one of a single SGE.
    first: Sge,
    pub(crate) remote_addr: u64,
    pub(crate) remote_rkey: u32,
    digest: u32,
}

impl Shape {
    /// The shape of a WQE that was never sent.
    pub(crate) const EMPTY: Shape = Shape {
        op: WrOpcode::Send,
        sges: 0,
        len: 0,
        first: Sge {
            addr: 0,
            length: 0,
            lkey: 0,
        },
        remote_addr: 0,
        remote_rkey: 0,
        digest: 0,
    };

    /// The shape of `wqe`.
    pub(crate) fn of(wqe: &SendWqe) -> Self {
        let sges = wqe.sges.sges();
        let r = &wqe.remote;
        let passed_on = [
            u64::from(wqe.flags) | u64::from(wqe.ex) << 32,
            r.compare_add,
            r.swap,
            u64::from(r.flush_type) | u64::from(r.flush_level) << 8,
        ];
        Shape {
            op: wqe.op,
            // At most `MAX_SGE`.
            sges: sges.len().min(usize::from(u8::MAX)) as u8,
            len: wqe.len,
            first: sges.first().copied().unwrap_or_default(),
            remote_addr: r.addr,
            remote_rkey: r.rkey,
            digest: digest(&passed_on),
        }
    }

    /// The SGE of a WQE that has exactly one: where a READ's or an atomic's response is
    /// stored, without reading the WQE again (checked where it is used, like any SGE).
    pub(crate) fn sge(&self) -> Option<Sge> {
        (self.sges == 1).then_some(self.first)
    }
}

/// A 32-bit digest of `words`, which a change of one word alters but for a 2^-32 chance
/// (each round is a bijection of the state; the last step folds it to 32 bits). Not keyed:
/// see [`Shape`] for why that is enough.
fn digest(words: &[u64]) -> u32 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for w in words {
        // A multiply-xorshift round (as splitmix64's finaliser).
        h = (h ^ w).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 31;
    }
    (h ^ h >> 32) as u32
}

/// A validated copy of a receive WQE.
pub(crate) struct RecvWqe {
    pub(crate) wr_id: u64,
    pub(crate) sges: SgeList,
}

impl RecvWqe {
    /// An empty copy with room for `max_sge` SGEs, for [`read_recv`] to fill.
    pub(crate) fn new(max_sge: u32) -> Result<Self> {
        Ok(RecvWqe {
            wr_id: 0,
            sges: SgeList::new(max_sge)?,
        })
    }
}

/// Reads `n` SGEs starting at `off` of element `index` into `list`, in place (the entries
/// past `n` are left as they were: only the first `n` are ever used). More than `list` has
/// room for is a length error: its queue's capacity says how many a WQE may have.
fn read_sges(
    q: &FromClient,
    index: u32,
    off: usize,
    n: usize,
    list: &mut SgeList,
) -> Result<(), WqeError> {
    list.clear();
    let sges = list.room.get_mut(..n).ok_or(WqeError::Length)?;
    let mut total = 0u64;
    for (i, s) in sges.iter_mut().enumerate() {
        let raw: rxe_abi::Sge = q
            .read_obj_at(index, off + i * SGE_SIZE)
            .map_err(|_| WqeError::Length)?;
        *s = Sge {
            addr: raw.addr,
            length: raw.length,
            lkey: raw.lkey,
        };
        total += u64::from(raw.length);
    }
    if total > u64::from(crate::proto::requester::MAX_MSG_SIZE) {
        return Err(WqeError::Length);
    }
    list.n = n;
    Ok(())
}

/// Checks that `len` bytes of inline data fit in the WQEs of `q`.
fn check_inline(q: &FromClient, len: u32) -> Result<(), WqeError> {
    if len as usize <= MAX_INLINE && q.holds(SEND_SGE_OFF, len as usize) {
        Ok(())
    } else {
        Err(WqeError::Length)
    }
}

/// Copies inline data of the send WQE at ring position `index`, decoded as `w`, from byte
/// `off` of it, into `dst`. The bytes are payload, read when sent (like an SGE's memory,
/// which the client may also change meanwhile); nothing is decided on them. Fails beyond
/// the WQE's length.
pub(crate) fn read_inline(
    q: &FromClient,
    index: u32,
    w: &SendWqe,
    off: usize,
    dst: &mut [u8],
) -> Result {
    let end = off.checked_add(dst.len()).ok_or(EINVAL)?;
    if !w.inline || end > w.len as usize {
        return Err(EINVAL);
    }
    q.read_at(index, SEND_SGE_OFF + off, dst)
}

/// Decodes the send WQE at ring position `index` into `w`, in place (its SGEs may be
/// many); `kernel`: the QP is a kernel consumer's (its UD requests carry their
/// address vector). On an error `w` holds parts of the WQE and must not be used.
pub(crate) fn read_send(
    q: &FromClient,
    index: u32,
    kernel: bool,
    w: &mut SendWqe,
) -> Result<(), WqeError> {
    let raw: SendWqeRaw = q.read_obj_at(index, 0).map_err(|_| WqeError::Length)?;
    let op = WrOpcode::from_u32(raw.opcode()).ok_or(WqeError::Opcode)?;
    let mut remote = Remote::default();
    let mut ud = Ud::default();
    let mut bind = Bind::default();
    let sges = &mut w.sges;
    let dma_len = raw.dma_length();
    let mut len = dma_len;
    match op {
        WrOpcode::RdmaWrite
        | WrOpcode::RdmaWriteImm
        | WrOpcode::RdmaRead
        | WrOpcode::AtomicWrite => {
            let r = raw.rdma();
            remote.addr = r.remote_addr;
            remote.rkey = r.rkey;
        }
        WrOpcode::AtomicCmpSwp | WrOpcode::AtomicFetchAdd => {
            let a = raw.atomic();
            remote.addr = a.remote_addr;
            remote.rkey = a.rkey;
            remote.compare_add = a.compare_add;
            remote.swap = a.swap;
        }
        WrOpcode::Flush => {
            let f = raw.flush();
            remote.addr = f.remote_addr;
            remote.rkey = f.rkey;
            remote.flush_type = f.type_;
            remote.flush_level = f.level;
        }
        WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv => {
            ud = raw.ud();
        }
        WrOpcode::BindMw => {
            bind = raw.mw();
        }
        WrOpcode::RegMr if kernel => {
            // Kernel requests only: the MR's iova and lkey, the new key and the access
            // rights (in the window member's places, where `write_send` put them).
            bind = Bind {
                length: 0,
                mw_rkey: 0,
                ..raw.mw()
            };
        }
        WrOpcode::LocalInv => {}
        _ => return Err(WqeError::Opcode),
    }
    let flags = raw.send_flags();
    let mut inline = false;
    sges.clear();
    if op == WrOpcode::AtomicWrite {
        // The 8 bytes to write travel in the WQE.
        len = 8;
        check_inline(q, len)?;
        inline = true;
    } else if matches!(op, WrOpcode::AtomicCmpSwp | WrOpcode::AtomicFetchAdd) {
        // The original value lands in the first SGE.
        read_sges(
            q,
            index,
            SEND_SGE_OFF,
            (raw.num_sge() as usize).min(1),
            sges,
        )?;
        len = 8;
    } else if flags & SEND_INLINE != 0
        && !op.is_local()
        && !matches!(op, WrOpcode::RdmaRead | WrOpcode::Flush)
    {
        check_inline(q, dma_len)?;
        inline = true;
    } else if !op.is_local() && op != WrOpcode::Flush {
        read_sges(q, index, SEND_SGE_OFF, raw.num_sge() as usize, sges)?;
        // The provider sets the length to what the SGEs hold: anything else is a corrupt
        // WQE.
        len = u32::try_from(sges.len()).map_err(|_| WqeError::Length)?;
        if len != dma_len {
            return Err(WqeError::Length);
        }
    }
    w.av = if kernel && matches!(op, WrOpcode::Send | WrOpcode::SendImm) {
        get_av(q, index).ok()
    } else {
        None
    };
    w.wr_id = raw.wr_id();
    w.op = op;
    w.flags = flags;
    w.ex = raw.ex();
    w.remote = remote;
    w.ud = ud;
    w.bind = bind;
    w.len = len;
    w.inline = inline;
    Ok(())
}

/// The `wr_id` of the send WQE at `index`, for completing a WQE that does not decode.
pub(crate) fn send_wr_id(q: &FromClient, index: u32) -> u64 {
    let mut v = [0u8; 8];
    match q.read_at(index, off::WR_ID, &mut v) {
        Ok(()) => u64::from_ne_bytes(v),
        Err(_) => 0,
    }
}

impl WqeError {
    /// The completion status of a WQE rejected this way.
    pub(crate) fn wc_status(self) -> WcStatus {
        match self {
            WqeError::Opcode => WcStatus::LocQpOpErr,
            WqeError::Length => WcStatus::LocLenErr,
        }
    }
}

/// Decodes the receive WQE at ring position `index` into `w`, in place (its SGEs may be
/// many). On an error `w` holds the WQE's wr_id (0 if it could not be read) and parts of
/// the rest, which must not be used.
pub(crate) fn read_recv(q: &FromClient, index: u32, w: &mut RecvWqe) -> Result<(), WqeError> {
    // A WQE that cannot be read completes (in error) with wr_id 0, not an older one's.
    w.wr_id = 0;
    let raw: RecvWqeRaw = q.read_obj_at(index, 0).map_err(|_| WqeError::Length)?;
    w.wr_id = raw.wr_id();
    read_sges(q, index, RECV_SGE_OFF, raw.num_sge() as usize, &mut w.sges)
}

/// Offsets of the fields of send and receive WQEs.
pub(crate) use rxe_abi::wqe_off as off;

/// Writes SGEs at `at` of an element.
fn put_sges(mem: &SharedMem, at: usize, sges: &[WrSge]) -> Result {
    let mut total = 0u32;
    for (i, s) in sges.iter().enumerate() {
        let o = at + i * SGE_SIZE;
        mem.write(o, &s.addr.to_ne_bytes())?;
        mem.write(o + 8, &s.length.to_ne_bytes())?;
        mem.write(o + 12, &s.lkey.to_ne_bytes())?;
        total = total.checked_add(s.length).ok_or(EINVAL)?;
    }
    Ok(())
}

/// Stores an address vector in the `ud.av` area of a kernel send WQE (only the kernel
/// reads it back: for userspace WQEs the area is ignored).
fn put_av(mem: &SharedMem, at: usize, av: &RoceAv) -> Result {
    mem.write(at, &av.sgid)?;
    mem.write(at + 16, &av.dgid)?;
    mem.write(at + 32, &av.dmac)?;
    mem.write(at + 38, &[av.traffic_class, av.hop_limit])?;
    mem.write(at + 40, &av.flow_label.to_ne_bytes())
}

/// Reads back what [`put_av`] stored.
fn get_av(q: &FromClient, index: u32) -> Result<RoceAv, WqeError> {
    let mut b = [0u8; AV_LEN];
    q.read_at(index, off::UD_AV, &mut b)
        .map_err(|_| WqeError::Length)?;
    let mut av = RoceAv::default();
    av.sgid
        .copy_from_slice(b.get(..16).ok_or(WqeError::Length)?);
    av.dgid
        .copy_from_slice(b.get(16..32).ok_or(WqeError::Length)?);
    av.dmac
        .copy_from_slice(b.get(32..38).ok_or(WqeError::Length)?);
    av.traffic_class = b[38];
    av.hop_limit = b[39];
    let mut fl = [0u8; 4];
    fl.copy_from_slice(b.get(40..44).ok_or(WqeError::Length)?);
    av.flow_label = u32::from_ne_bytes(fl);
    Ok(av)
}

/// Bytes [`put_av`] uses (within `struct rxe_av`).
const AV_LEN: usize = 44;
const _: () = assert!(AV_LEN <= rxe_abi::AV_SIZE);

/// Posts a kernel consumer's send request at the producer index of `q` (the caller
/// publishes it with `produce`). `max_sge`/`max_inline`: the QP's capacities; `av`: the
/// address of a UD request.
pub(crate) fn write_send(
    q: &Producer,
    kmem: &KernelMem,
    wr: &SendWr,
    av: Option<&RoceAv>,
    max_sge: usize,
    max_inline: usize,
) -> Result {
    let sges = wr.sges.get(..wr.num_sge).ok_or(EINVAL)?;
    let inline = wr.send_flags & SEND_INLINE != 0;
    let len: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    let len = u32::try_from(len).map_err(|_| EINVAL)?;
    if !inline && sges.len() > max_sge || inline && len as usize > max_inline {
        return Err(EINVAL);
    }
    q.write_next(|mem, base| {
        let w32 = |o: usize, v: u32| mem.write(base + o, &v.to_ne_bytes());
        let w64 = |o: usize, v: u64| mem.write(base + o, &v.to_ne_bytes());
        w64(off::WR_ID, wr.wr_id)?;
        w32(off::OPCODE, wr.opcode)?;
        w32(off::FLAGS, wr.send_flags)?;
        w32(off::EX, wr.ex)?;
        match WrOpcode::from_u32(wr.opcode) {
            Some(WrOpcode::AtomicCmpSwp | WrOpcode::AtomicFetchAdd) => {
                w64(off::REMOTE_ADDR, wr.remote_addr)?;
                w64(off::ATOMIC_COMPARE, wr.compare_add)?;
                w64(off::ATOMIC_SWAP, wr.swap)?;
                w32(off::ATOMIC_RKEY, wr.rkey)?;
            }
            Some(WrOpcode::RegMr) => {
                w64(off::MW_ADDR, wr.reg_iova)?;
                w32(off::MW_MR_LKEY, wr.reg_lkey)?;
                w32(off::MW_RKEY, wr.reg_key)?;
                w32(off::MW_ACCESS, wr.reg_access)?;
            }
            _ if av.is_some() => {
                w32(off::UD_QPN, wr.remote_qpn)?;
                w32(off::UD_QKEY, wr.remote_qkey)?;
                w32(off::UD_AH, 0)?;
                if let Some(av) = av {
                    put_av(mem, base + off::UD_AV, av)?;
                }
            }
            _ => {
                w64(off::REMOTE_ADDR, wr.remote_addr)?;
                w32(off::RDMA_RKEY, wr.rkey)?;
            }
        }
        w32(off::DMA_LEN, len)?;
        if inline {
            let mut at = base + SEND_SGE_OFF;
            let mut buf = [0u8; 64];
            for s in sges {
                let mut done = 0usize;
                while done < s.length as usize {
                    let n = buf.len().min(s.length as usize - done);
                    let chunk = buf.get_mut(..n).ok_or(EINVAL)?;
                    kmem.read_at(s.addr.wrapping_add(done as u64), chunk)
                        .map_err(|_| EINVAL)?;
                    mem.write(at, chunk)?;
                    at += n;
                    done += n;
                }
            }
            w32(off::DMA_NUM_SGE, 0)
        } else {
            w32(off::DMA_NUM_SGE, sges.len() as u32)?;
            put_sges(mem, base + SEND_SGE_OFF, sges)
        }
    })
}

/// Posts a kernel consumer's receive request at the producer index of `q` (the caller
/// publishes it with `produce`).
pub(crate) fn write_recv(q: &Producer, wr: &RecvWr, max_sge: usize) -> Result {
    let sges = wr.sges.get(..wr.num_sge).ok_or(EINVAL)?;
    if sges.len() > max_sge {
        return Err(EINVAL);
    }
    let len: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    let len = u32::try_from(len).map_err(|_| EINVAL)?;
    q.write_next(|mem, base| {
        mem.write(base + off::RECV_WR_ID, &wr.wr_id.to_ne_bytes())?;
        mem.write(base + off::RECV_NUM_SGE, &(sges.len() as u32).to_ne_bytes())?;
        mem.write(base + off::RECV_LEN, &len.to_ne_bytes())?;
        put_sges(mem, base + RECV_SGE_OFF, sges)
    })
}
