//! Peak memory of the controller against one hostile agent answer
//! (docs/security.md, "The fleet controller"):
//! `cargo run -p nettune-fleet --example hostile_agent -- KIND`, KIND one of
//! `values` (just under the value cap, padded to 64 MiB with one string),
//! `junk` (64 MiB of `[],`, refused by its count) or `string` (one 64 MiB
//! string). Prints the peak RSS (VmHWM) before and after.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use nettune_fleet::client::Agent;
use nettune_fleet::proto::{self, Request, Response, MAX_RESPONSE, MAX_RESPONSE_VALUES};
use std::time::Duration;

fn hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The agent's stdout, made as it is read: `head`, then `unit` `n`
/// times, then `tail`; nothing of the answer is held by the fake.
struct Gen {
    head: Vec<u8>,
    unit: &'static [u8],
    n: usize,
    tail: Vec<u8>,
    at: usize,
}

impl std::io::Read for Gen {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (h, u) = (self.head.len(), self.unit.len() * self.n);
        let mut k = 0;
        while k < buf.len() {
            let i = self.at;
            let b = if i < h {
                self.head[i]
            } else if i < h + u {
                self.unit[(i - h) % self.unit.len()]
            } else if i < h + u + self.tail.len() {
                self.tail[i - h - u]
            } else {
                std::thread::sleep(Duration::from_secs(600));
                return Ok(k);
            };
            buf[k] = b;
            k += 1;
            self.at += 1;
        }
        Ok(k)
    }
}

fn main() {
    let kind = std::env::args().nth(1).unwrap_or_else(|| "values".into());
    let start = br#"{"type":"json","code":0,"value":["#.to_vec();
    let (unit, n, tail): (&'static [u8], usize, Vec<u8>) = match kind.as_str() {
        // `[],` counts two values (`[` and `,`): just under the cap, then
        // one string filling the frame to 64 MiB.
        "values" => {
            let n = MAX_RESPONSE_VALUES / 2 - 16;
            let pad = MAX_RESPONSE - 64 - start.len() - 3 * n;
            let mut t = b"\"".to_vec();
            t.extend(std::iter::repeat_n(b'x', pad));
            t.extend_from_slice(b"\"]}");
            (b"[],", n, t)
        }
        "junk" => (b"[],", (MAX_RESPONSE - 64) / 3, b"0]}".to_vec()),
        _ => (b"x", MAX_RESPONSE - 64, b"\"]}".to_vec()),
    };
    let mut start = start;
    if kind == "string" {
        start.push(b'"');
    }
    let len = start.len() + unit.len() * n + tail.len();
    let mut head = Vec::new();
    proto::write_preamble(&mut head).unwrap();
    let hello = Response::Hello {
        version: proto::PROTO_VERSION,
        nettune_version: "0.1.0".into(),
        caps: vec![],
    };
    proto::write_frame(&mut head, &hello, MAX_RESPONSE).unwrap();
    head.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
    head.extend_from_slice(&start);
    let out = Gen {
        head,
        unit,
        n,
        tail,
        at: 0,
    };
    let (_req_r, req_w) = std::io::pipe().unwrap();
    let before = hwm_kib();
    let mut a = Agent::over(
        "fake".into(),
        out,
        req_w,
        None,
        None,
        "0.1.0",
        Duration::from_secs(60),
    )
    .unwrap();
    let q = Request::Inspect {
        root: None,
        iface: vec![],
    };
    let r = a.json(&q, Duration::from_secs(300));
    let after = hwm_kib();
    println!(
        "{kind} ({} MiB answer): {} ; peak RSS {} MiB -> {} MiB",
        len >> 20,
        match &r {
            Ok(_) => "decoded".to_string(),
            Err(e) => format!("refused: {e}"),
        },
        before / 1024,
        after / 1024
    );
    std::process::exit(0);
}
