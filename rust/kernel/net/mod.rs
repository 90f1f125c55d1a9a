// SPDX-License-Identifier: GPL-2.0

//! Networking: net devices, their notifier, network namespaces and UDP tunnel sockets.

pub mod device;
pub mod namespace;
pub mod notifier;
pub mod skb;
pub mod udp_tunnel;
