//! What the engine's in-process tests share.

#![allow(clippy::unwrap_used, dead_code)]

use host::Root;
use nettune_engine::config::Limits;
use nettune_engine::server::{Server, ServerConfig};
use std::net::SocketAddr;

/// An in-process server on 127.0.0.1 (any port), serving on its own thread.
pub fn loopback_server() -> SocketAddr {
    let s = Server::bind(ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        dual_stack: false,
        token: None,
        limits: Limits::default(),
        max_sessions: 8,
        root: Root::new("/"),
        log: false,
        doctor: None,
    })
    .unwrap();
    let a = s.local_addr().unwrap();
    std::thread::spawn(move || s.serve());
    a
}
