// SPDX-License-Identifier: GPL-2.0

//! Selective retry of an RDMA READ (the requester side): which responses arrived beyond
//! a missing one of the oldest read, and which missing ranges to ask for again.
//!
//! A read's responses may be placed in any order: each carries the PSN that gives its
//! offset. When one is lost, the completer keeps the later ones (their data stored, their
//! PSNs noted here) instead of dropping them, and asks for each missing range with an RDMA
//! READ request of its own: the PSN of the range's first response, the remote address and
//! length of that range (the IBTA lets a requester repeat a read request for part of the
//! original range; rxe and rrxe answer it continuing the original response sequence).
//! When the missing responses arrive, the acknowledged PSN jumps over the ones kept.
//!
//! The responses of later reads that arrive meanwhile are kept too, in the same window of
//! PSNs (a read's PSNs follow the one before): when the oldest completes, the next takes
//! what was kept of it ([`ReadHoles::retire`] forgets only the PSNs of the read that
//! completed). Dropped, they had to be asked for again, each once its read was the oldest;
//! and the reads posted meanwhile then answered behind those asks, so that their responses
//! too came while an older read was missing some: with several reads in flight, one loss
//! had every later read fetched twice (two VMs, 64 KiB reads: 127,000 responses for
//! 64,000, a retry per read).
//!
//! When a timeout finds nothing kept (the rest of the read is lost, or late), the rest is
//! asked for in chunks of [`CHUNK`] responses, each once the one before arrived.
//!
//! Every range asked for lies within one block of [`CHUNK`] responses counted from the
//! read's first PSN. A responder replays only ranges inside what it saved of a request
//! (rxe and rrxe drop others), and when the read request itself was lost (or dropped as
//! out of sequence behind a lost one), the first chunk asked for is a new request to the
//! responder, which saves that chunk only. Asks that keep to the blocks stay inside
//! whatever the responder saved: the whole read, or the blocks asked for as new ones.
//!
//! Without this, a lost response cost the whole rest of the read (go-back-N), and a long
//! read over a lossy link was sent many times over.

use super::psn::Psn;

/// Responses kept beyond the oldest missing one, in PSNs (a power of two dividing the PSN
/// space). Responses further ahead are dropped and asked for again later.
pub const WINDOW: u32 = 1024;
const WORDS: usize = (WINDOW / 64) as usize;

/// Most responses asked for by one request, and the size of the blocks (from the read's
/// first PSN) that asks keep within, in which the rest of a read is asked for after a
/// timeout: a spurious retry, or one of many queued behind a long reply, costs at most this
/// many duplicate responses (a whole 8 MiB read asked for again at every timeout could keep
/// a slow link busy with stale replays for ever).
pub const CHUNK: u32 = 128;

/// Responses from `psn` to the end of its block of [`CHUNK`] (blocks counted from `first`,
/// the read's first PSN).
fn to_block_end(first: Psn, psn: Psn) -> u32 {
    CHUNK - psn.distance_from(first) % CHUNK
}

/// One missing range of responses to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hole {
    /// PSN of its first response.
    pub psn: Psn,
    /// Number of responses (PSNs) missing.
    pub count: u32,
}

/// The responses of the oldest RDMA READ that arrived ahead of a missing one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadHoles {
    /// Bit `psn % WINDOW`: the response with that PSN arrived (within `[base, base + WINDOW)`).
    bits: [u64; WORDS],
    /// The oldest missing PSN (the completer's next expected PSN) when `kept > 0`.
    base: Psn,
    /// Responses kept.
    kept: u32,
    /// The oldest missing range, up to this PSN, was asked for.
    asked_to: Option<Psn>,
    /// The rest of the read is asked for in chunks: the current one ends before this PSN.
    chunk_end: Option<Psn>,
}

impl Default for ReadHoles {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadHoles {
    /// Nothing kept.
    pub const fn new() -> Self {
        ReadHoles {
            bits: [0; WORDS],
            base: Psn::new(0),
            kept: 0,
            asked_to: None,
            chunk_end: None,
        }
    }

    /// Forgets everything (the read completed, or the QP starts over).
    pub fn clear(&mut self) {
        self.forget_kept();
        self.chunk_end = None;
    }

    fn forget_kept(&mut self) {
        if self.kept > 0 || self.asked_to.is_some() {
            self.bits = [0; WORDS];
            self.kept = 0;
            self.asked_to = None;
        }
    }

    /// Whether responses are kept: the read has a missing range.
    pub const fn is_active(&self) -> bool {
        self.kept > 0
    }

    fn slot(psn: Psn) -> (usize, u64) {
        let i = psn.value() % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn has(&self, psn: Psn) -> bool {
        let (w, m) = Self::slot(psn);
        self.bits.get(w).is_some_and(|b| b & m != 0)
    }

    fn set(&mut self, psn: Psn, on: bool) {
        let (w, m) = Self::slot(psn);
        if let Some(b) = self.bits.get_mut(w) {
            if on {
                *b |= m;
            } else {
                *b &= !m;
            }
        }
    }

    /// Whether the response with `psn` may be kept while `expected` (the completer's next
    /// PSN) is missing: ahead of it, inside the window, and not kept already.
    pub fn can_keep(&self, expected: Psn, psn: Psn) -> bool {
        let d = psn.distance_from(expected);
        d > 0 && d < WINDOW && !(self.kept > 0 && self.has(psn))
    }

    /// Records a response kept (its data stored) while `expected` is missing. The caller
    /// checked [`ReadHoles::can_keep`].
    pub fn keep(&mut self, expected: Psn, psn: Psn) {
        if !self.can_keep(expected, psn) {
            return;
        }
        if self.kept == 0 {
            self.base = expected;
        }
        self.set(psn, true);
        self.kept += 1;
    }

    /// The completer now expects `expected` (it took the responses before it in order) of
    /// the read whose last PSN is `last`. Returns how many responses from `expected` on,
    /// up to `last`, were kept: the completer takes them as received and expects the PSN
    /// after them. Those of later reads stay kept.
    pub fn advance(&mut self, expected: Psn, last: Psn) -> u32 {
        if self.kept == 0 {
            return 0;
        }
        let moved = expected.distance_from(self.base);
        if moved >= WINDOW || expected.is_before(self.base) {
            // Not the read this was kept for.
            self.forget_kept();
            return 0;
        }
        // The PSNs passed cannot be kept (the caller took them in order).
        let mut p = self.forget_first(moved);
        let mut run = 0;
        while self.kept > 0 && self.has(p) && !p.is_after(last) {
            self.set(p, false);
            self.kept -= 1;
            run += 1;
            p = p.next();
        }
        self.base = p;
        if self.kept == 0 {
            self.forget_kept();
        } else if self.asked_to.is_some_and(|a| !a.is_after(p)) {
            self.asked_to = None;
        }
        run
    }

    /// The request whose last PSN is `last` completed (a read, or any request the
    /// completer takes while later reads have responses kept): forgets the responses kept
    /// up to `last` (none are left unless a read failed), what was asked and the chunk; the
    /// responses of later reads stay kept, from the PSN after `last` on.
    pub fn retire(&mut self, last: Psn) {
        self.asked_to = None;
        self.chunk_end = None;
        if self.kept == 0 {
            return;
        }
        let next = last.next();
        if !next.is_after(self.base) {
            return;
        }
        let moved = next.distance_from(self.base);
        if moved >= WINDOW {
            self.forget_kept();
            return;
        }
        self.base = self.forget_first(moved);
        if self.kept == 0 {
            self.forget_kept();
        }
    }

    /// Forgets the responses kept at the first `moved` PSNs from `base` (fewer than
    /// [`WINDOW`]); returns the PSN after them.
    fn forget_first(&mut self, moved: u32) -> Psn {
        let mut p = self.base;
        for _ in 0..moved {
            if self.has(p) {
                self.set(p, false);
                self.kept = self.kept.saturating_sub(1);
            }
            p = p.next();
        }
        p
    }

    /// Responses kept.
    pub const fn kept(&self) -> u32 {
        self.kept
    }

    /// Whether the oldest missing range was not asked for yet.
    pub fn must_ask(&self) -> bool {
        self.kept > 0 && self.asked_to.is_none()
    }

    /// The oldest missing range of the read from `first` to `last` (its first and last
    /// PSNs), from the expected PSN to the next response kept, the end of its block or the
    /// read's end (none when nothing is kept, or when nothing of it is missing: the
    /// expected PSN is beyond the read or kept itself), noted as asked for. Only this
    /// one: rxe narrows its saved read to the range of each repeated request and drops a
    /// later request below it, so ranges are asked for in address order, the next once
    /// the one before arrived; asking again for the oldest (after a timeout) never goes
    /// below the last one asked for. What follows the newest response kept is not a
    /// range: it may still be on its way, and [`ReadHoles::chunk`] asks for it after a
    /// timeout.
    pub fn ask(&mut self, first: Psn, last: Psn) -> Option<Hole> {
        if self.kept == 0 || self.base.is_after(last) {
            return None;
        }
        let limit = to_block_end(first, self.base).min(last.distance_from(self.base) + 1);
        let mut p = self.base;
        let mut count = 0;
        while count < limit && !self.has(p) {
            p = p.next();
            count += 1;
        }
        if count == 0 {
            return None;
        }
        self.asked_to = Some(p);
        Some(Hole {
            psn: self.base,
            count,
        })
    }

    /// The next chunk of the read from `first` to `last` (its first and last PSNs) to ask
    /// for: from `expected` (the completer's next PSN) to the end of its block, noted as
    /// the current chunk. After a timeout with nothing kept, and whenever the current chunk
    /// arrived whole.
    pub fn chunk(&mut self, first: Psn, expected: Psn, last: Psn) -> Hole {
        let count = (last.distance_from(expected) + 1).min(to_block_end(first, expected));
        self.chunk_end = Some(expected.wrapping_add(count));
        Hole {
            psn: expected,
            count,
        }
    }

    /// Whether the completer, expecting `expected` with nothing kept, received the whole
    /// current chunk: the next one is to be asked for.
    pub fn chunk_done(&self, expected: Psn) -> bool {
        self.kept == 0 && self.chunk_end == Some(expected)
    }
}
