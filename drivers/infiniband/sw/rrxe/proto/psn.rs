// SPDX-License-Identifier: GPL-2.0

//! Packet sequence numbers: 24-bit values compared in serial-number arithmetic.
//!
//! PSNs wrap at 2^24. Two PSNs are ordered by their distance modulo 2^24 taken as
//! a signed 24-bit number, so `a` is after `b` when `a - b` lies in `1 ..= 2^23 - 1`. A distance
//! of exactly 2^23 counts as "before" (the sign bit is set), as in rxe.

use core::cmp::Ordering;

/// Mask of the 24 PSN bits.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// A packet sequence number (always within 24 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Psn(u32);

impl Psn {
    /// The PSN holding the low 24 bits of `v`.
    pub const fn new(v: u32) -> Self {
        Psn(v & PSN_MASK)
    }

    /// The PSN as an integer in `0 ..= 2^24 - 1`.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// `self + n` modulo 2^24.
    pub const fn wrapping_add(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_add(n))
    }

    /// `self - n` modulo 2^24.
    pub const fn wrapping_sub(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_sub(n))
    }

    /// The following PSN.
    pub const fn next(self) -> Self {
        self.wrapping_add(1)
    }

    /// The preceding PSN.
    pub const fn prev(self) -> Self {
        self.wrapping_sub(1)
    }

    /// Signed distance `self - other` in `-2^23 ..= 2^23 - 1`.
    pub const fn diff(self, other: Psn) -> i32 {
        // Move the 24-bit difference to the top of a 32-bit word, then shift it back
        // arithmetically to sign-extend it.
        ((self.0.wrapping_sub(other.0) << 8) as i32) >> 8
    }

    /// Serial-number order of `self` relative to `other`.
    pub const fn compare(self, other: Psn) -> Ordering {
        let d = self.diff(other);
        if d < 0 {
            Ordering::Less
        } else if d > 0 {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// True when `self` is after `other`.
    pub const fn is_after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }

    /// True when `self` is before `other`.
    pub const fn is_before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// True when `first <= self <= last` in serial-number order.
    pub const fn within(self, first: Psn, last: Psn) -> bool {
        self.diff(first) >= 0 && self.diff(last) <= 0
    }

    /// Number of PSNs from `from` up to `self` (`self - from` modulo 2^24, unsigned).
    pub const fn distance_from(self, from: Psn) -> u32 {
        self.0.wrapping_sub(from.0) & PSN_MASK
    }
}
