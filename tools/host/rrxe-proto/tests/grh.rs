// SPDX-License-Identifier: GPL-2.0

//! The UD receive view of the network header: layout and packet type.

use rrxe_proto::proto::grh::{UdGrh, UD_GRH_LEN};

fn ipv4_header() -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[9] = 17;
    h[12..16].copy_from_slice(&[10, 0, 0, 1]);
    h[16..20].copy_from_slice(&[10, 0, 0, 2]);
    h
}

#[test]
fn ipv4_goes_in_the_last_20_bytes_after_zeros() {
    let ip = ipv4_header();
    let g = UdGrh::new(&ip).unwrap();
    assert_eq!(g.area.len() as u64, UD_GRH_LEN);
    assert_eq!(&g.area[..20], &[0u8; 20]);
    assert_eq!(&g.area[20..], &ip);
    // The destination address ends the area, where UCX looks for it.
    assert_eq!(&g.area[36..], &[10, 0, 0, 2]);
    assert!(g.ipv4);
    assert_eq!(g.roce_pkt_type(), 2);
}

#[test]
fn ipv6_fills_the_area() {
    let mut ip = [0u8; 40];
    ip[0] = 0x60;
    ip[6] = 17;
    ip[24..40].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let g = UdGrh::new(&ip).unwrap();
    assert_eq!(g.area, ip);
    assert!(!g.ipv4);
    assert_eq!(g.roce_pkt_type(), 1);
}

#[test]
fn other_lengths_are_refused() {
    for len in [0, 19, 21, 24, 39, 41, 60] {
        assert_eq!(UdGrh::new(&vec![0x45; len]), None, "length {len}");
    }
}
