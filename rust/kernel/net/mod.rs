// SPDX-License-Identifier: GPL-2.0

//! Networking: net devices, their notifier, network namespaces, UDP tunnel sockets, socket
//! buffers, routes and the transmission of UDP datagrams, whose payload may be
//! pieces of pages carried by reference.

pub mod device;
pub mod namespace;
pub mod notifier;
pub mod page_piece;
pub mod route;
pub mod skb;
pub mod udp_tunnel;
pub mod xmit;
