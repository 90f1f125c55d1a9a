// SPDX-License-Identifier: GPL-2.0

//! Work requests and work completions of kernel consumers: the `ib_send_wr` / `ib_recv_wr`
//! lists of `post_send` / `post_recv` / `post_srq_recv`, and the `ib_wc` array of
//! `poll_cq`. Everything is copied into plain values; no pointer leaves this module.

use super::{mr::KernelMem, object::CoreObj, ops::DeviceOps, shared::SharedMem};
use crate::bindings;
use core::{marker::PhantomData, mem::size_of};
use kernel::prelude::*;

/// Most SGEs read from one work request (more is an error for the caller to report).
pub const MAX_WR_SGE: usize = 32;

/// One scatter/gather element of a kernel work request.
#[derive(Clone, Copy, Default, Debug)]
pub struct WrSge {
    /// Address (a kernel virtual address for the DMA MR, an I/O virtual address else).
    pub addr: u64,
    /// Length.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

/// A kernel send work request, decoded.
pub struct SendWr {
    /// `wr_id` (or the `wr_cqe` pointer value, returned as is in the completion).
    pub wr_id: u64,
    /// `IB_WR_*`.
    pub opcode: u32,
    /// `IB_SEND_*`.
    pub send_flags: u32,
    /// Immediate data (network order as stored) or rkey to invalidate.
    pub ex: u32,
    /// SGEs (`num_sge` of them; `Err` from [`SendWrs::next`] if more than [`MAX_WR_SGE`]).
    pub sges: [WrSge; MAX_WR_SGE],
    /// Number of SGEs.
    pub num_sge: usize,
    /// RDMA and atomic: remote address and key.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Atomic operands.
    pub compare_add: u64,
    /// Atomic swap operand.
    pub swap: u64,
    /// UD destination QP.
    pub remote_qpn: u32,
    /// UD Q_Key.
    pub remote_qkey: u32,
    /// REG_MR: the MR's current lkey, the new key and access rights.
    pub reg_lkey: u32,
    /// New key of REG_MR.
    pub reg_key: u32,
    /// Access of REG_MR.
    pub reg_access: u32,
    /// The MR's iova when REG_MR was posted: the consumer may change it after
    /// `ib_map_mr_sg` (NFS/RDMA puts the RPC's XID in its upper 32 bits).
    pub reg_iova: u64,
}

/// A kernel receive work request, decoded.
pub struct RecvWr {
    /// `wr_id`.
    pub wr_id: u64,
    /// SGEs.
    pub sges: [WrSge; MAX_WR_SGE],
    /// Number of SGEs.
    pub num_sge: usize,
}

/// Reads `n` SGEs at `sg` into `out`.
///
/// # Safety
///
/// `sg` points to `n` valid `ib_sge` (when `n > 0`).
unsafe fn read_sges(
    sg: *const bindings::ib_sge,
    n: i32,
    out: &mut [WrSge; MAX_WR_SGE],
) -> Result<usize> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n > MAX_WR_SGE {
        return Err(EINVAL);
    }
    for (i, o) in out.iter_mut().take(n).enumerate() {
        // SAFETY: `i < n`, within the caller's array.
        let s = unsafe { &*sg.add(i) };
        *o = WrSge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
    }
    Ok(n)
}

/// The list of send work requests of one `post_send` call.
pub struct SendWrs<'a, T: DeviceOps> {
    cur: *const bindings::ib_send_wr,
    /// The request last returned (the one to report if posting it fails).
    pub(crate) last: *const bindings::ib_send_wr,
    _t: PhantomData<(&'a bindings::ib_send_wr, T)>,
}

impl<'a, T: DeviceOps> SendWrs<'a, T> {
    /// # Safety
    ///
    /// `wr` is the valid list a `post_send` call of a device of `T` received.
    pub(crate) unsafe fn from_raw(wr: *const bindings::ib_send_wr) -> Self {
        Self {
            cur: wr,
            last: wr,
            _t: PhantomData,
        }
    }

    /// Access to the memory the requests name by kernel virtual address (inline data):
    /// the lists come from kernel consumers only (userspace QPs never get here).
    pub fn kernel_mem(&self) -> KernelMem {
        // SAFETY: `post_send_cb` builds a `SendWrs` only for kernel consumers' QPs.
        unsafe { KernelMem::new() }
    }

    /// The next request: `None` at the end, `Err` for one that cannot be decoded. `ud`:
    /// the QP is a UD or GSI QP, whose requests carry an AH (`ah_num` gives its number).
    pub fn next<A>(
        &mut self,
        ud: bool,
        ah: impl Fn(&T::Ah) -> A,
    ) -> Option<Result<(SendWr, Option<A>)>> {
        // SAFETY: Type invariant: null or a valid request of the list.
        let wr = unsafe { self.cur.as_ref() }?;
        self.last = self.cur;
        self.cur = wr.next;
        let mut out = SendWr {
            // SAFETY: Both union members are 64-bit values.
            wr_id: unsafe { *wr.__bindgen_anon_1.wr_id.as_ref() },
            opcode: wr.opcode,
            send_flags: wr.send_flags as u32,
            // SAFETY: Both union members are 32-bit integers.
            ex: unsafe { *wr.ex.invalidate_rkey.as_ref() },
            sges: [WrSge::default(); MAX_WR_SGE],
            num_sge: 0,
            remote_addr: 0,
            rkey: 0,
            compare_add: 0,
            swap: 0,
            remote_qpn: 0,
            remote_qkey: 0,
            reg_lkey: 0,
            reg_key: 0,
            reg_access: 0,
            reg_iova: 0,
        };
        // SAFETY: `sg_list` holds `num_sge` entries (verbs contract).
        match unsafe { read_sges(wr.sg_list, wr.num_sge, &mut out.sges) } {
            Ok(n) => out.num_sge = n,
            Err(e) => return Some(Err(e)),
        }
        let p: *const bindings::ib_send_wr = wr;
        if ud {
            // SAFETY: Requests of UD and GSI QPs are `ib_ud_wr` with an AH of this device.
            let u = unsafe { &*p.cast::<bindings::ib_ud_wr>() };
            out.remote_qpn = u.remote_qpn;
            out.remote_qkey = u.remote_qkey;
            let a = (!u.ah.is_null()).then(|| {
                // SAFETY: As above; the AH is initialised and alive for the call.
                ah(unsafe { CoreObj::<bindings::ib_ah, T::Ah>::data(u.ah) })
            });
            return Some(Ok((out, a)));
        }
        match wr.opcode {
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
            | bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
            | bindings::ib_wr_opcode_IB_WR_RDMA_READ
            | bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV
            | bindings::ib_wr_opcode_IB_WR_ATOMIC_WRITE
            | bindings::ib_wr_opcode_IB_WR_FLUSH => {
                // SAFETY: These opcodes come in an `ib_rdma_wr` (verbs contract), whose
                // first member is the `ib_send_wr`.
                let r = unsafe { &*p.cast::<bindings::ib_rdma_wr>() };
                out.remote_addr = r.remote_addr;
                out.rkey = r.rkey;
            }
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
            | bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => {
                // SAFETY: As above, an `ib_atomic_wr`.
                let a = unsafe { &*p.cast::<bindings::ib_atomic_wr>() };
                out.remote_addr = a.remote_addr;
                out.rkey = a.rkey;
                out.compare_add = a.compare_add;
                out.swap = a.swap;
            }
            bindings::ib_wr_opcode_IB_WR_REG_MR => {
                // SAFETY: As above, an `ib_reg_wr` naming a valid MR of the device.
                let r = unsafe { &*p.cast::<bindings::ib_reg_wr>() };
                // SAFETY: The MR is valid for the call.
                if let Some(m) = unsafe { r.mr.as_ref() } {
                    out.reg_lkey = m.lkey;
                    out.reg_iova = m.iova;
                }
                out.reg_key = r.key;
                out.reg_access = r.access as u32;
            }
            _ => {}
        }
        Some(Ok((out, None)))
    }
}

/// The list of receive work requests of one `post_recv` / `post_srq_recv` call.
pub struct RecvWrs<'a> {
    cur: *const bindings::ib_recv_wr,
    /// The request last returned (the one to report if posting it fails).
    pub(crate) last: *const bindings::ib_recv_wr,
    _t: PhantomData<&'a bindings::ib_recv_wr>,
}

impl<'a> RecvWrs<'a> {
    /// # Safety
    ///
    /// `wr` is the valid list a `post_recv` or `post_srq_recv` call received.
    pub(crate) unsafe fn from_raw(wr: *const bindings::ib_recv_wr) -> Self {
        Self {
            cur: wr,
            last: wr,
            _t: PhantomData,
        }
    }
}

impl Iterator for RecvWrs<'_> {
    type Item = Result<RecvWr>;

    fn next(&mut self) -> Option<Result<RecvWr>> {
        // SAFETY: Type invariant: null or a valid request of the list.
        let wr = unsafe { self.cur.as_ref() }?;
        self.last = self.cur;
        self.cur = wr.next;
        let mut out = RecvWr {
            // SAFETY: Both union members are 64-bit values.
            wr_id: unsafe { *wr.__bindgen_anon_1.wr_id.as_ref() },
            sges: [WrSge::default(); MAX_WR_SGE],
            num_sge: 0,
        };
        // SAFETY: `sg_list` holds `num_sge` entries (verbs contract).
        match unsafe { read_sges(wr.sg_list, wr.num_sge, &mut out.sges) } {
            Ok(n) => out.num_sge = n,
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(out))
    }
}

/// A work completion for a kernel consumer.
#[derive(Default)]
pub struct KernelWc {
    /// `wr_id` / `wr_cqe` as posted.
    pub wr_id: u64,
    /// `IB_WC_*` status.
    pub status: u32,
    /// `IB_WC_*` opcode.
    pub opcode: u32,
    /// Bytes.
    pub byte_len: u32,
    /// The `ib_qp` (its address, from [`super::qp::QpInit::ib_qp`]).
    pub qp: usize,
    /// Immediate data or invalidated rkey.
    pub ex: u32,
    /// Source QP (UD).
    pub src_qp: u32,
    /// `IB_WC_*` flags.
    pub wc_flags: u32,
    /// Port.
    pub port_num: u32,
    /// Network header type (`RDMA_NETWORK_*`) with `IB_WC_WITH_NETWORK_HDR_TYPE`.
    pub network_hdr_type: u8,
}

/// A work completion for userspace (`struct ib_uverbs_wc`).
pub type UverbsWc = bindings::ib_uverbs_wc;
/// The immediate data or invalidated rkey of a [`UverbsWc`] (its `ex` union).
pub type UverbsWcEx = bindings::ib_uverbs_wc__bindgen_ty_1;

/// Size of a kernel completion in a CQ's queue.
pub const KERNEL_WC_SIZE: usize = size_of::<bindings::ib_wc>();

impl SharedMem {
    /// Stores a kernel completion at `off`. Only for queues of kernel consumers: they
    /// are never mapped to userspace (the completion holds a kernel address).
    pub fn write_kernel_wc(&self, off: usize, wc: &KernelWc) -> Result {
        let end = off.checked_add(KERNEL_WC_SIZE).ok_or(EINVAL)?;
        // Never where userspace could read the kernel address it holds.
        if end > self.size() || self.is_exposed() {
            return Err(EINVAL);
        }
        let mut v = bindings::ib_wc {
            status: wc.status,
            opcode: wc.opcode,
            byte_len: wc.byte_len,
            qp: wc.qp as *mut bindings::ib_qp,
            src_qp: wc.src_qp,
            wc_flags: wc.wc_flags as i32,
            port_num: wc.port_num,
            network_hdr_type: wc.network_hdr_type,
            ..Default::default()
        };
        v.__bindgen_anon_1.bindgen_union_field = wc.wr_id;
        v.ex.bindgen_union_field = wc.ex;
        // SAFETY: In bounds (checked); a typed, unaligned store into plain memory.
        unsafe { core::ptr::write_unaligned(self.as_ptr().add(off).cast::<bindings::ib_wc>(), v) };
        Ok(())
    }
}

/// The `ib_wc` array of a `poll_cq` call.
pub struct WcArray<'a> {
    wc: *mut bindings::ib_wc,
    len: usize,
    _t: PhantomData<&'a mut bindings::ib_wc>,
}

impl<'a> WcArray<'a> {
    /// # Safety
    ///
    /// `wc` points to `len` writable `ib_wc` for the array's lifetime.
    pub(crate) unsafe fn from_raw(wc: *mut bindings::ib_wc, len: usize) -> Self {
        Self {
            wc,
            len,
            _t: PhantomData,
        }
    }

    /// Room for this many completions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no room at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the kernel completion stored at `off` of `mem` into entry `i`.
    pub fn fill(&mut self, i: usize, mem: &SharedMem, off: usize) -> Result {
        if i >= self.len {
            return Err(EINVAL);
        }
        let end = off.checked_add(KERNEL_WC_SIZE).ok_or(EINVAL)?;
        // Memory userspace can write never yields a completion (its `qp` is a pointer).
        if end > mem.size() || mem.is_exposed() {
            return Err(EINVAL);
        }
        // SAFETY: Source in bounds, never exposed to userspace, so it holds a completion
        // `write_kernel_wc` stored (or zeroes); destination is entry `i` of the caller's
        // array.
        unsafe {
            let v = core::ptr::read_unaligned(mem.as_ptr().add(off).cast::<bindings::ib_wc>());
            core::ptr::write(self.wc.add(i), v);
        }
        Ok(())
    }
}
