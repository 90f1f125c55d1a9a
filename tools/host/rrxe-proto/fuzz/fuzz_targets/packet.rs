// SPDX-License-Identifier: GPL-2.0

//! Fuzz target for rrxe's protocol core.
//!
//! 1. Decode: the input as a received UDP payload. Whatever parses must encode back to a
//!    packet that parses the same; the ICRC generated over it must verify.
//! 2. Encode: the input as a recipe (opcode, header fields, payload). Encoding must succeed
//!    and decode to the same headers and payload.
//! 3. Decisions: segmentation, read replies and the responder/completer checks with
//!    arbitrary numbers, which must never panic (overflow checks are on).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rrxe_proto::proto::aeth::{Aeth, Syndrome};
use rrxe_proto::proto::atomic::{AtomicAckEth, AtomicEth};
use rrxe_proto::proto::bth::Bth;
use rrxe_proto::proto::completer::{self, CompState, Response, WqeView};
use rrxe_proto::proto::deth::Deth;
use rrxe_proto::proto::flush::Feth;
use rrxe_proto::proto::icrc::{self, NetHeaders};
use rrxe_proto::proto::ieth::Ieth;
use rrxe_proto::proto::immdt::ImmDt;
use rrxe_proto::proto::mtu::Mtu;
use rrxe_proto::proto::opcode::{HeaderSet, Opcode};
use rrxe_proto::proto::packet::{encode, Headers, Packet};
use rrxe_proto::proto::psn::Psn;
use rrxe_proto::proto::requester::Segmenter;
use rrxe_proto::proto::responder::{self, ReadReply, SeqState};
use rrxe_proto::proto::reth::Reth;
use rrxe_proto::proto::verbs::{Access, QpType, WrOpcode};
use rrxe_proto::proto::ProtoError;
use rrxe_proto::TableCrc32;

/// Reads fixed-size values from the front of the input, zero when it runs out.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut v = [0u8; N];
        let n = N.min(self.0.len());
        v[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        v
    }
    fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

const IP: [u8; 20] = [
    0x45, 0x02, 0x00, 0x00, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, 0, 0,
    2,
];
const UDP: [u8; 8] = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x00, 0x00, 0x00];

fn decode(data: &[u8]) {
    let Ok(p) = Packet::parse(data) else {
        return;
    };
    let mut buf = vec![0u8; data.len() + 8];
    let lay = encode(&p.hdr, p.payload, &mut buf).expect("re-encoding a parsed packet");
    assert_eq!(lay.total_len, data.len());
    let q = Packet::parse(&buf[..lay.total_len]).expect("re-parsing");
    assert_eq!(p, q);
    let net = NetHeaders::Ipv4 { ip: &IP, udp: &UDP };
    let pkt = &mut buf[..lay.total_len];
    icrc::generate(&TableCrc32, &net, pkt).expect("icrc");
    icrc::verify(&TableCrc32, &net, pkt).expect("verify");
    pkt[0] ^= 0x80;
    assert_eq!(
        icrc::verify(&TableCrc32, &net, pkt),
        Err(ProtoError::BadIcrc)
    );
}

fn build(data: &[u8]) {
    let mut i = Input(data);
    let op = Opcode::ALL[usize::from(i.u8()) % Opcode::ALL.len()];
    let set = op.headers();
    let flags = i.u8();
    let bth = Bth {
        opcode: op,
        solicited: flags & 1 != 0,
        mig_req: flags & 2 != 0,
        pad: 0,
        tver: 0,
        pkey: u16::from_le_bytes(i.bytes()),
        fecn: flags & 4 != 0,
        becn: flags & 8 != 0,
        dest_qpn: i.u32() & 0xff_ffff,
        ack_req: flags & 16 != 0,
        psn: Psn::new(i.u32()),
    };
    let mut h = Headers::new(bth);
    let on = |x: HeaderSet| set.contains(x);
    if on(HeaderSet::FETH) {
        let b = i.u8();
        h.feth = Some(Feth {
            placement: b & 0xf,
            selectivity: b >> 6,
        });
    }
    if on(HeaderSet::RETH) {
        h.reth = Some(Reth {
            va: i.u64(),
            rkey: i.u32(),
            dma_len: i.u32(),
        });
    }
    if on(HeaderSet::DETH) {
        h.deth = Some(Deth {
            qkey: i.u32(),
            src_qpn: i.u32() & 0xff_ffff,
        });
    }
    if on(HeaderSet::ATOMIC_ETH) {
        h.atomic_eth = Some(AtomicEth {
            va: i.u64(),
            rkey: i.u32(),
            swap_add: i.u64(),
            compare: i.u64(),
        });
    }
    if on(HeaderSet::AETH) {
        h.aeth = Some(Aeth {
            syndrome: Syndrome::from_u8(i.u8()),
            msn: i.u32() & 0xff_ffff,
        });
    }
    if on(HeaderSet::ATOMIC_ACK_ETH) {
        h.atomic_ack = Some(AtomicAckEth { orig: i.u64() });
    }
    if on(HeaderSet::IMMDT) {
        h.immdt = Some(ImmDt { imm: i.u32() });
    }
    if on(HeaderSet::IETH) {
        h.ieth = Some(Ieth { rkey: i.u32() });
    }
    let rest = i.rest();
    let payload = if op.has_payload() {
        &rest[..rest.len().min(4096)]
    } else {
        &[][..]
    };
    let mut buf = vec![0u8; 4200];
    let lay = encode(&h, payload, &mut buf).expect("encoding valid headers");
    let p = Packet::parse(&buf[..lay.total_len]).expect("decoding what was encoded");
    h.bth.pad = lay.pad as u8;
    assert_eq!(p.hdr, h);
    assert_eq!(p.payload, payload);
}

fn decisions(data: &[u8]) {
    let mut i = Input(data);
    let qp = [QpType::Rc, QpType::Uc, QpType::Ud, QpType::Gsi][usize::from(i.u8() & 3)];
    let wr = WrOpcode::from_u32(u32::from(i.u8() & 0x3f)).unwrap_or(WrOpcode::Send);
    let mtu = Mtu::ALL[usize::from(i.u8()) % Mtu::ALL.len()];
    let len = i.u32();
    let psn = Psn::new(i.u32());
    if let Ok(mut seg) = Segmenter::new(qp, wr, len, mtu, psn) {
        let last = seg.last_psn();
        let mut n = 0u32;
        for s in seg.by_ref().take(64) {
            assert!(s.payload_len <= mtu.bytes());
            assert!(s.offset.checked_add(s.remaining).is_some());
            n += 1;
        }
        assert!(n >= 1);
        let _ = seg.resume_at(Psn::new(i.u32()));
        let _ = seg.take(4).count();
        let _ = last;
    }
    let fresh = i.u8() & 1 != 0;
    for s in ReadReply::new(psn, len, mtu, fresh).take(64) {
        assert!(s.payload_len <= mtu.bytes());
    }
    let op = Opcode::ALL[usize::from(i.u8()) % Opcode::ALL.len()];
    let prev = Opcode::from_u8(i.u8()).ok();
    let mut st = SeqState {
        psn_nak_sent: i.u8() & 1 != 0,
        drop_msg: i.u8() & 1 != 0,
    };
    let _ = responder::check_psn(qp, op, Psn::new(i.u32()), psn, &mut st);
    let _ = responder::check_op_seq(qp, prev, op);
    let feth = Some(Feth {
        placement: i.u8() & 0xf,
        selectivity: 0,
    });
    let _ = responder::check_access(qp, op, Access(i.u32()), feth);
    let _ = responder::check_resource(op, i.u32(), i.u8() & 1 != 0);
    let reth = Reth {
        va: i.u64(),
        rkey: i.u32(),
        dma_len: i.u32(),
    };
    let _ = responder::check_length(qp, op, i.u32(), mtu, Some(reth), i.u64());
    let _ = responder::check_range(i.u64(), i.u64(), i.u64(), i.u64());
    let _ = responder::check_write_payload(i.u32(), i.u32(), i.u8(), mtu);
    let _ = responder::check_atomic_write(i.u32(), i.u32(), i.u8());
    let _ = responder::check_atomic_alignment(i.u64());
    let res = responder::ReadResource {
        first_psn: psn,
        va: i.u64(),
        len: i.u32(),
        rkey: i.u32(),
    };
    let _ = responder::read_replay(&res, Psn::new(i.u32()), &reth);
    let _ = responder::read_last_psn(psn, len, mtu);
    let _ = responder::next_msn(i.u32());
    let st = CompState {
        psn: Psn::new(i.u32()),
        opcode: Opcode::from_u8(i.u8()).ok(),
    };
    let wqe = WqeView {
        wr,
        first_psn: Psn::new(i.u32()),
        last_psn: Psn::new(i.u32()),
        all_sent: i.u8() & 1 != 0,
    };
    let rsp = Response {
        opcode: op,
        psn: Psn::new(i.u32()),
        syndrome: Some(Syndrome::from_u8(i.u8())),
    };
    let _ = completer::judge(&st, &wqe, &rsp);
    let mut c = completer::RetryCounter::new(i.u8());
    let _ = completer::retry(&mut c, i.u8() & 1 != 0, i.u8() & 1 != 0, psn, st.psn);
    let _ = completer::rnr_retry(&mut c, i.u8());
}

fuzz_target!(|data: &[u8]| {
    decode(data);
    build(data);
    decisions(data);
});
