// SPDX-License-Identifier: GPL-2.0

//! Per-device counters, shown by `rdma statistic show link DEV/1` with the names rxe uses.

use crate::ext::rdma::stats::{HwStats, HwStatsTable};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::c_str;

/// A device counter; the discriminant is its index in [`NAMES`].
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// Packets sent.
    SentPkts = 0,
    /// Packets received and accepted.
    RcvdPkts = 1,
    /// Duplicate requests received.
    DuplicateRequest = 2,
    /// Requests received ahead of sequence.
    OutOfSeqRequest = 3,
    /// RNR NAKs received.
    RcvdRnrErr = 4,
    /// RNR NAKs sent.
    SendRnrErr = 5,
    /// PSN sequence error NAKs received.
    RcvdSeqErr = 6,
    /// Retries exhausted.
    RetryExceededErr = 8,
    /// RNR retries exhausted.
    RetryRnrExceededErr = 9,
    /// Retransmissions started by the completer.
    CompleterRetryErr = 10,
    /// Packets that could not be sent.
    SendErr = 11,
    /// The port went down.
    LinkDowned = 12,
    /// RDMA operations sent (as rxe: the requests and responses of RDMA READ/WRITE).
    RdmaSends = 13,
    /// RDMA operations received.
    RdmaRecvs = 14,
    /// rrxe's own from here. Packets for a QP whose opcode is of another transport, or
    /// that arrived in a state that takes none.
    RcvdBadTypeState = 15,
    /// Packets for an RC or UC QP from another address than its peer's.
    RcvdBadAddr = 16,
    /// Packets with a P_Key that does not match.
    RcvdBadPkey = 17,
    /// Datagrams with a Q_Key that does not match.
    RcvdBadQkey = 18,
    /// Responses (ACK, NAK, read response, atomic acknowledge) for no PSN outstanding.
    RcvdBadRespPsn = 19,
    /// Datagrams with bad headers or ICRC, or for a QP that does not exist (a multicast
    /// group without a member here), or whose headers could not be made linear (memory).
    RcvdBadPkt = 20,
    /// Packets dropped because their QP's receive queue was full (rxe queues without
    /// limit).
    RcvdQueueFull = 21,
    /// Requests dropped without a reply (IBA class D): those of UC and UD QPs with no
    /// receive posted, an access or length error, or in a broken message, which RC would
    /// answer with a NAK.
    RcvdReqDropped = 22,
    /// Doorbells that ran the engine in the caller: for a client that waits for each
    /// message, on a single CPU, or where clients that post ahead (or receivers that
    /// poll) keep every CPU busy ([`crate::qp::QpShared::ring`]).
    DoorbellInline = 23,
    /// ... of which found the QP's pass running elsewhere and left it to that pass.
    DoorbellBusy = 24,
    /// Doorbells that left the engine to the work item (a client that posts ahead).
    DoorbellKick = 25,
    /// Runs of a QP's work item.
    WorkRuns = 26,
    /// ACKs not sent because a later one of the same pass acknowledges their requests, or,
    /// left to a loopback peer ([`crate::respbox`]), not taken before a later one replaced
    /// them.
    AckCoalesced = 27,
    /// Packets of `sent_pkts` whose payload went by reference to its pages (zero-copy).
    SentZeroCopy = 28,
    /// Packets of `rcvd_pkts` whose payload stayed in the skb's fragments (a NIC's pages,
    /// or a sender's on this host), copied from there to its destination.
    RcvdPaged = 29,
    /// Datagrams of `sent_pkts` that carried several packets of a message to a QP of the
    /// same device (a loopback burst; `sent_pkts` counts its packets).
    SentBursts = 30,
    /// Doorbells of `doorbell_inline` for a client that posts ahead, run in the caller
    /// because clients that post ahead and poll, or a receiver that polls, kept every CPU
    /// busy ([`crate::posters`]).
    DoorbellCrowded = 31,
    /// ACKs of `sent_pkts` (and `rcvd_pkts`) that a responder left for its loopback peer's
    /// completer without a packet ([`crate::respbox`]).
    AckDirect = 32,
    /// Atomic acknowledges and RDMA READ responses of `sent_pkts` (and `rcvd_pkts`) that a
    /// responder left for its loopback peer's completer without a packet
    /// ([`crate::respbox`]).
    RespDirect = 33,
    /// Requests of `sent_pkts` (and `rcvd_pkts`) that a requester left for its loopback
    /// peer's responder without a packet ([`crate::reqbox`]).
    ReqDirect = 34,
}

/// Number of counters.
const NUM: usize = 35;

/// The counter names, in index order (rxe's names and order, then rrxe's own).
static NAMES: HwStatsTable<NUM> = HwStatsTable::new([
    c_str!("sent_pkts"),
    c_str!("rcvd_pkts"),
    c_str!("duplicate_request"),
    c_str!("out_of_seq_request"),
    c_str!("rcvd_rnr_err"),
    c_str!("send_rnr_err"),
    c_str!("rcvd_seq_err"),
    c_str!("ack_deferred"),
    c_str!("retry_exceeded_err"),
    c_str!("retry_rnr_exceeded_err"),
    c_str!("completer_retry_err"),
    c_str!("send_err"),
    c_str!("link_downed"),
    c_str!("rdma_sends"),
    c_str!("rdma_recvs"),
    c_str!("rcvd_bad_type_state"),
    c_str!("rcvd_bad_addr"),
    c_str!("rcvd_bad_pkey"),
    c_str!("rcvd_bad_qkey"),
    c_str!("rcvd_bad_resp_psn"),
    c_str!("rcvd_bad_pkt"),
    c_str!("rcvd_queue_full"),
    c_str!("rcvd_req_dropped"),
    c_str!("doorbell_inline"),
    c_str!("doorbell_busy"),
    c_str!("doorbell_kick"),
    c_str!("work_runs"),
    c_str!("ack_coalesced"),
    c_str!("sent_zero_copy"),
    c_str!("rcvd_paged"),
    c_str!("sent_bursts"),
    c_str!("doorbell_crowded"),
    c_str!("ack_direct"),
    c_str!("resp_direct"),
    c_str!("req_direct"),
]);

/// The counters of one device.
pub(crate) struct Counters([AtomicU64; NUM]);

impl Counters {
    /// All counters at zero.
    pub(crate) const fn new() -> Self {
        Self([const { AtomicU64::new(0) }; NUM])
    }

    /// Counts one event.
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// Counts `n` events.
    pub(crate) fn add(&self, c: Counter, n: u64) {
        if let Some(v) = self.0.get(c as usize) {
            v.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The value of one counter.
    pub(crate) fn get(&self, c: Counter) -> u64 {
        self.0
            .get(c as usize)
            .map_or(0, |v| v.load(Ordering::Relaxed))
    }

    /// Copies the counters into `values` (as many as fit).
    pub(crate) fn read(&self, values: &mut [u64]) {
        for (dst, src) in values.iter_mut().zip(&self.0) {
            *dst = src.load(Ordering::Relaxed);
        }
    }

    /// The counter names.
    pub(crate) fn names() -> &'static HwStats {
        NAMES.as_stats()
    }
}
