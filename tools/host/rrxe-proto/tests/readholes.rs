// SPDX-License-Identifier: GPL-2.0

//! Selective retry of an RDMA READ: kept responses, the missing range, advancing.

use rrxe_proto::proto::psn::{Psn, PSN_MASK};
use rrxe_proto::proto::readholes::{ReadHoles, CHUNK, WINDOW};

fn p(v: u32) -> Psn {
    Psn::new(v & PSN_MASK)
}

/// The oldest range of a read whose first PSN is `first` (and far from its end).
fn ask(h: &mut ReadHoles, first: u32) -> Option<(u32, u32)> {
    ask_to(h, first, first.wrapping_add(4 * WINDOW))
}

/// The oldest range of the read from `first` to `last`.
fn ask_to(h: &mut ReadHoles, first: u32, last: u32) -> Option<(u32, u32)> {
    h.ask(p(first), p(last)).map(|x| (x.psn.value(), x.count))
}

/// Advances to `expected` in a read far from its end.
fn adv(h: &mut ReadHoles, expected: u32) -> u32 {
    h.advance(p(expected), p(expected.wrapping_add(4 * WINDOW)))
}

/// The next chunk of a read from `first` to `last`, expecting `expected`.
fn chunk(h: &mut ReadHoles, first: u32, expected: u32, last: u32) -> (u32, u32) {
    let c = h.chunk(p(first), p(expected), p(last));
    (c.psn.value(), c.count)
}

#[test]
fn nothing_kept() {
    let mut h = ReadHoles::new();
    assert!(!h.is_active());
    assert!(!h.must_ask());
    assert_eq!(adv(&mut h, 5), 0);
    assert_eq!(ask(&mut h, 0), None);
}

#[test]
fn holes_then_fill() {
    // Read of PSNs 100..=119; 100 arrived in order, 101 and 104..=105 lost.
    let mut h = ReadHoles::new();
    for q in [102, 103, 106, 107] {
        assert!(h.can_keep(p(101), p(q)));
        h.keep(p(101), p(q));
    }
    assert_eq!(h.kept(), 4);
    assert!(!h.can_keep(p(101), p(103)), "kept already");
    assert!(!h.can_keep(p(101), p(101)), "the missing one itself");
    assert!(!h.can_keep(p(101), p(100)), "behind");
    assert!(h.is_active() && h.must_ask());
    assert_eq!(ask(&mut h, 100), Some((101, 1)));
    assert!(!h.must_ask());
    // Asked again after a timeout: the same range.
    assert_eq!(ask(&mut h, 100), Some((101, 1)));
    // 101 arrives: 102 and 103 were kept, the completer expects 104, the next range.
    assert_eq!(adv(&mut h, 102), 2);
    assert!(h.must_ask());
    assert_eq!(ask(&mut h, 100), Some((104, 2)));
    // 104 and 105 arrive: 106 and 107 kept; nothing kept beyond.
    assert_eq!(adv(&mut h, 105), 0);
    assert!(!h.must_ask(), "104..=105 was asked for and is arriving");
    assert_eq!(adv(&mut h, 106), 2);
    assert!(!h.is_active());
    assert_eq!(ask(&mut h, 100), None);
}

#[test]
fn ranges_go_up_one_at_a_time() {
    let mut h = ReadHoles::new();
    // Every other PSN kept: holes of one.
    for i in 0..40 {
        h.keep(p(0), p(2 * i + 1));
    }
    for i in 0..40 {
        assert!(h.must_ask());
        assert_eq!(ask(&mut h, 0), Some((2 * i, 1)));
        assert_eq!(adv(&mut h, 2 * i + 1), 1);
    }
    assert!(!h.is_active());
}

#[test]
fn window_and_wrap() {
    let base = PSN_MASK - 3;
    let mut h = ReadHoles::new();
    assert!(!h.can_keep(p(base), p(base + WINDOW)));
    assert!(h.can_keep(p(base), p(base + WINDOW - 1)));
    h.keep(p(base), p(base + 2));
    h.keep(p(base), p(base + 6));
    assert_eq!(ask(&mut h, base), Some((base, 2)));
    assert_eq!(adv(&mut h, base + 2), 1);
    assert_eq!(ask(&mut h, base), Some(((base + 3) & PSN_MASK, 3)));
    assert_eq!(adv(&mut h, base + 6), 1);
    assert!(!h.is_active());
}

#[test]
fn advance_far_or_back_clears() {
    let mut h = ReadHoles::new();
    h.keep(p(50), p(60));
    assert_eq!(adv(&mut h, 50 + WINDOW), 0);
    assert!(!h.is_active());
    h.keep(p(50), p(60));
    assert_eq!(adv(&mut h, 40), 0);
    assert!(!h.is_active());
    h.keep(p(50), p(60));
    h.clear();
    assert!(!h.is_active() && !h.must_ask());
}

#[test]
fn ranges_are_at_most_a_chunk() {
    let mut h = ReadHoles::new();
    h.keep(p(0), p(500));
    assert_eq!(ask(&mut h, 0), Some((0, CHUNK)));
    assert!(!h.must_ask());
    // The range arrived: the next part of the hole.
    assert_eq!(adv(&mut h, CHUNK), 0);
    assert!(h.must_ask());
    assert_eq!(ask(&mut h, 0), Some((CHUNK, CHUNK)));
}

#[test]
fn chunks_after_a_timeout() {
    let mut h = ReadHoles::new();
    assert_eq!(chunk(&mut h, 10, 10, 500), (10, CHUNK));
    assert!(!h.chunk_done(p(10 + CHUNK - 1)));
    assert!(h.chunk_done(p(10 + CHUNK)));
    // Responses kept: their ranges come first.
    h.keep(p(10 + CHUNK), p(10 + CHUNK + 5));
    assert!(!h.chunk_done(p(10 + CHUNK)));
    h.clear();
    assert!(!h.chunk_done(p(10 + CHUNK)));
    // The last chunk ends with the read.
    assert_eq!(chunk(&mut h, 10, 490, 500), (490, 11));
    assert!(h.chunk_done(p(501)));
    // Across the PSN wrap.
    assert_eq!(
        chunk(&mut h, PSN_MASK, PSN_MASK, PSN_MASK + 3),
        (PSN_MASK, 4)
    );
    assert!(h.chunk_done(p(PSN_MASK + 4)));
}

#[test]
fn asks_stay_in_blocks() {
    // The read request (first PSN 1000) was lost; the first chunk, asked for as a new
    // request, is all the responder saved (1000..=1127), and its last response is lost:
    // the next ask is 1127 alone (1127..=1254 would be dropped by the responder for ever).
    let mut h = ReadHoles::new();
    assert_eq!(chunk(&mut h, 1000, 1000, 5000), (1000, CHUNK));
    assert_eq!(chunk(&mut h, 1000, 1127, 5000), (1127, 1));
    assert!(h.chunk_done(p(1128)));
    assert_eq!(chunk(&mut h, 1000, 1128, 5000), (1128, CHUNK));
    // A hole from 1120 with the next response kept at 1130: 1120..=1127 first, then
    // 1128..=1129.
    h.clear();
    h.keep(p(1120), p(1130));
    assert_eq!(ask(&mut h, 1000), Some((1120, 8)));
    assert_eq!(adv(&mut h, 1128), 0);
    assert!(h.must_ask());
    assert_eq!(ask(&mut h, 1000), Some((1128, 2)));
    assert_eq!(adv(&mut h, 1130), 1);
    assert!(!h.is_active());
}

#[test]
fn later_reads_kept() {
    // Read A is PSNs 0..=63, read B 64..=127. A loses 10; 11..=63 and all of B arrive.
    let mut h = ReadHoles::new();
    for q in (11..64).chain(64..128) {
        assert!(h.can_keep(p(10), p(q)));
        h.keep(p(10), p(q));
    }
    assert_eq!(ask_to(&mut h, 0, 63), Some((10, 1)));
    // 10 arrives: A takes 11..=63 and no more, B's stay kept.
    assert_eq!(h.advance(p(11), p(63)), 53);
    assert_eq!(h.kept(), 64);
    h.retire(p(63));
    assert_eq!(h.kept(), 64);
    assert!(h.is_active());
    // B is the oldest: all of it was kept.
    assert_eq!(h.advance(p(64), p(127)), 64);
    assert!(!h.is_active());
}

#[test]
fn asks_stop_at_the_read_end() {
    // A is 0..=63 and loses 60..=63; B (64..=127) loses 64..=70, the rest kept.
    let mut h = ReadHoles::new();
    for q in 71..128 {
        h.keep(p(60), p(q));
    }
    assert_eq!(ask_to(&mut h, 0, 63), Some((60, 4)));
    assert_eq!(h.advance(p(64), p(63)), 0, "nothing of A kept beyond 63");
    h.retire(p(63));
    // B is the oldest, nothing of its start kept: its own missing range.
    assert!(h.must_ask());
    assert_eq!(ask_to(&mut h, 64, 127), Some((64, 7)));
    assert_eq!(h.advance(p(71), p(127)), 57);
    assert!(!h.is_active());
}

#[test]
fn retire_forgets_only_the_read_that_ended() {
    // A (0..=63) fails with 20..=30 kept; B's 64..=69 kept.
    let mut h = ReadHoles::new();
    for q in (20..31).chain(64..70) {
        h.keep(p(10), p(q));
    }
    assert_eq!(ask_to(&mut h, 0, 63), Some((10, 10)));
    h.retire(p(63));
    assert_eq!(h.kept(), 6);
    assert!(h.must_ask(), "what was asked for A is forgotten");
    assert_eq!(h.advance(p(64), p(127)), 6);
    // A read ending before everything kept forgets nothing.
    let mut h = ReadHoles::new();
    h.keep(p(100), p(105));
    h.retire(p(50));
    assert_eq!(h.kept(), 1);
    // One ending beyond the window forgets everything.
    h.retire(p(100 + 2 * WINDOW));
    assert!(!h.is_active());
}

#[test]
fn no_range_when_the_expected_one_is_kept() {
    let mut h = ReadHoles::new();
    h.keep(p(10), p(11));
    h.keep(p(10), p(12));
    // The completer would have taken 11 on: nothing is missing from 11.
    h.retire(p(10));
    assert_eq!(ask_to(&mut h, 0, 63), None);
    assert!(h.must_ask(), "nothing was asked for");
    assert_eq!(h.advance(p(11), p(63)), 2);
}

mod props {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// A read of `n` responses from `start`, delivered in a random order with losses
        /// and duplicates, then the ranges asked for delivered in turn (as a responder
        /// answers them), completes: the completer's expected PSN reaches the end, each
        /// range asked for starts at it and holds only PSNs neither taken nor kept, and
        /// every PSN is taken exactly once (in order or kept); every range asked for lies
        /// in one block of `CHUNK` responses from the read's first PSN.
        #[test]
        fn read_with_losses_completes(
            start in 0..=PSN_MASK,
            n in 1u32..3000,
            order in prop::collection::vec((any::<u16>(), 0u8..10), 1..3000),
        ) {
            let end = n; // offsets 0..n
            let mut h = ReadHoles::new();
            let mut expected = 0u32; // offset of the next PSN expected
            let mut have = BTreeSet::new(); // offsets kept or taken
            let mut rounds = 0;
            let arrive = |off: u32, h: &mut ReadHoles, expected: &mut u32,
                              have: &mut BTreeSet<u32>| {
                let psn = p(start.wrapping_add(off));
                let exp = p(start.wrapping_add(*expected));
                if off == *expected {
                    prop_assert!(!have.contains(&off));
                    have.insert(off);
                    *expected += 1;
                    let last = p(start.wrapping_add(end - 1));
                    let run = h.advance(p(start.wrapping_add(*expected)), last);
                    for k in 0..run {
                        prop_assert!(have.contains(&(*expected + k)), "skipped PSN not kept");
                    }
                    *expected += run;
                } else if off > *expected && h.can_keep(exp, psn) {
                    prop_assert!(!have.contains(&off));
                    prop_assert!(off - *expected < WINDOW);
                    h.keep(exp, psn);
                    have.insert(off);
                }
                Ok(())
            };
            // The first pass: each response lost with probability 1/10, some duplicated.
            for (i, &(r, lost)) in order.iter().take(n as usize).enumerate() {
                let off = i as u32;
                if lost == 0 {
                    continue;
                }
                arrive(off, &mut h, &mut expected, &mut have)?;
                if r % 7 == 0 && off > 0 {
                    arrive(off - 1, &mut h, &mut expected, &mut have)?;
                }
            }
            // Then: ask (through the read's end) and deliver every range asked for.
            while expected < end {
                rounds += 1;
                prop_assert!(rounds < 2 * n as usize + 10, "no progress");
                // The oldest missing range, or with nothing kept, the next chunk from
                // the expected PSN.
                let last = p(start.wrapping_add(end - 1));
                let (first, count) = match h.ask(p(start), last) {
                    Some(hole) => (hole.psn.distance_from(p(start)), hole.count),
                    None => {
                        let c = h.chunk(p(start), p(start.wrapping_add(expected)), last);
                        (c.psn.distance_from(p(start)), c.count)
                    }
                };
                prop_assert_eq!(first, expected, "not the oldest range");
                prop_assert!(count > 0 && count <= CHUNK);
                prop_assert_eq!(first / CHUNK, (first + count - 1) / CHUNK, "across a block");
                for off in first..first + count {
                    prop_assert!(off < end, "asked beyond the read");
                    prop_assert!(!have.contains(&off), "asked for a PSN it has");
                    arrive(off, &mut h, &mut expected, &mut have)?;
                }
            }
            prop_assert_eq!(expected, end);
            prop_assert_eq!(have.len() as u32, end);
            prop_assert!(!h.is_active());
        }

        /// Reads in a row (their PSNs one after the other), their responses delivered in
        /// order with losses, as the completer takes them: a read takes the responses
        /// kept of it when it is the oldest (those of later reads kept meanwhile stay
        /// kept), and its completion retires its PSNs; then the ranges asked for, for the
        /// oldest read each time, delivered in turn. Every read completes, every PSN is
        /// taken once, and every range asked for lies in the oldest read, starts at the
        /// PSN expected and holds only PSNs neither taken nor kept.
        #[test]
        fn reads_in_a_row_with_losses_complete(
            start in 0..=PSN_MASK,
            sizes in prop::collection::vec(1u32..300, 1..12),
            lost in prop::collection::vec(0u8..12, 3600),
        ) {
            let mut firsts = Vec::new();
            let mut end = 0u32;
            for n in &sizes {
                firsts.push(end);
                end += n;
            }
            let last_of = |r: usize| firsts[r] + sizes[r] - 1;
            let mut h = ReadHoles::new();
            let mut cur = 0usize; // the oldest read not complete
            let mut expected = 0u32;
            let mut have = BTreeSet::new();
            let psn = |off: u32| p(start.wrapping_add(off));
            // Takes `off` if it is expected, then what was kept from there, read by read.
            let arrive = |off: u32, h: &mut ReadHoles, cur: &mut usize, expected: &mut u32,
                          have: &mut BTreeSet<u32>| {
                if have.contains(&off) || off < *expected {
                    return Ok(());
                }
                if off > *expected {
                    if h.can_keep(psn(*expected), psn(off)) {
                        prop_assert!(off - *expected < WINDOW);
                        h.keep(psn(*expected), psn(off));
                        have.insert(off);
                    }
                    return Ok(());
                }
                have.insert(off);
                *expected += 1;
                loop {
                    let last = last_of(*cur);
                    let run = h.advance(psn(*expected), psn(last));
                    for k in 0..run {
                        prop_assert!(have.contains(&(*expected + k)), "taken, not kept");
                    }
                    *expected += run;
                    prop_assert!(*expected <= last + 1, "taken beyond the read");
                    if *expected <= last {
                        return Ok(());
                    }
                    h.retire(psn(last));
                    *cur += 1;
                    if *cur == sizes.len() {
                        return Ok(());
                    }
                }
            };
            for off in 0..end {
                if lost[off as usize % lost.len()] != 0 {
                    arrive(off, &mut h, &mut cur, &mut expected, &mut have)?;
                }
            }
            let mut rounds = 0;
            while expected < end {
                rounds += 1;
                prop_assert!(rounds < 2 * end as usize + 10, "no progress");
                let (first, last) = (firsts[cur], last_of(cur));
                let (from, count) = match h.ask(psn(first), psn(last)) {
                    Some(hole) => (hole.psn.distance_from(psn(0)), hole.count),
                    None => {
                        prop_assert!(!h.is_active(), "kept, but no range to ask for");
                        let c = h.chunk(psn(first), psn(expected), psn(last));
                        (c.psn.distance_from(psn(0)), c.count)
                    }
                };
                prop_assert_eq!(from, expected, "not the oldest range");
                prop_assert!(count > 0 && count <= CHUNK);
                prop_assert!(from + count - 1 <= last, "beyond the oldest read");
                for off in from..from + count {
                    prop_assert!(!have.contains(&off), "asked for a PSN it has");
                    arrive(off, &mut h, &mut cur, &mut expected, &mut have)?;
                }
            }
            prop_assert_eq!(cur, sizes.len());
            prop_assert_eq!(have.len() as u32, end);
            prop_assert!(!h.is_active());
        }
    }
}
