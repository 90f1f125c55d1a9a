// SPDX-License-Identifier: GPL-2.0

//! Transport timer encodings.
//!
//! - RNR NAK timer (`enum ib_rnr_timeout`): a five-bit code in
//!   the RNR NAK syndrome and in the QP's `min_rnr_timer`, giving the time the requester waits
//!   before retrying. Code 0 is the longest, 655.36 ms.
//! - Local ACK timeout (QP attribute `timeout`): five bits, `4.096 us * 2^n`;
//!   0 disables the transport timer.

/// Microseconds for each RNR timer code (IBA values).
///
/// rxe's table has 61410 for code 25 (a typo of the specified 61.44 ms); rrxe uses the
/// specified value. The code travels on the wire unchanged, so this affects only how long
/// the local requester waits.
pub const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The RNR wait in microseconds for a timer code (its low five bits).
pub fn rnr_timeout_us(code: u8) -> u32 {
    RNR_TIMER_US
        .get(usize::from(code & 0x1f))
        .copied()
        .unwrap_or(RNR_TIMER_US[0])
}

/// The local ACK timeout in nanoseconds for the five-bit `timeout` attribute: 4096 ns shifted
/// by the code, or `None` for code 0 (no transport timer). Codes above 31 are clamped to 31.
pub const fn local_ack_timeout_ns(timeout: u8) -> Option<u64> {
    if timeout == 0 {
        None
    } else {
        let code = if timeout > 31 { 31 } else { timeout };
        Some(4096u64 << code)
    }
}
