//! Peak memory of the controller against one hostile agent answer
//! (docs/security.md, "The fleet controller"):
//! `cargo run -p nettune-fleet --example hostile_agent -- KIND [HOSTS]`, KIND
//! one of `values` (just under the value cap, padded to 64 MiB with one
//! string), `junk` (64 MiB of `[],`, refused by its count) or `string` (one
//! 64 MiB string); HOSTS such agents answer at once (1 by default), each
//! answer dropped once decoded. Prints the peak RSS (VmHWM) before and after.
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
/// times, then `pad` bytes (`"` and `x`s: a string's opening), then `tail`; nothing of the answer is held
/// by the fake.
struct Gen {
    /// The controller's side: before the answer's first byte, every byte
    /// it writes (`wait` of them: preamble, hello, the request) is read,
    /// so the answer is one a request waits for.
    requests: std::io::PipeReader,
    wait: usize,
    gate: usize,
    head: Vec<u8>,
    unit: &'static [u8],
    n: usize,
    pad: usize,
    tail: Vec<u8>,
    at: usize,
}

use std::io::Read;

impl Read for Gen {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (h, u, x) = (self.head.len(), self.unit.len() * self.n, self.pad);
        let mut k = 0;
        while k < buf.len() {
            if self.at == self.gate && self.wait > 0 {
                if k > 0 {
                    return Ok(k);
                }
                let mut sink = vec![0u8; self.wait];
                self.requests.read_exact(&mut sink)?;
                self.wait = 0;
            }
            let i = self.at;
            let b = if i < h {
                self.head[i]
            } else if i < h + u {
                self.unit[(i - h) % self.unit.len()]
            } else if i < h + u + x {
                if i == h + u {
                    b'"'
                } else {
                    b'x'
                }
            } else if i < h + u + x + self.tail.len() {
                self.tail[i - h - u - x]
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

/// One hostile agent's answer to an `inspect`: decoded or refused.
fn one(kind: &str) -> String {
    let start = br#"{"type":"json","code":0,"value":["#.to_vec();
    let (unit, n, pad, tail): (&'static [u8], usize, usize, Vec<u8>) = match kind {
        // `[],` counts two values (`[` and `,`): just under the cap, then
        // one string filling the frame to 64 MiB.
        "values" => {
            let n = MAX_RESPONSE_VALUES / 2 - 16;
            // The pad opens the string (its first byte is `"`).
            let pad = MAX_RESPONSE - 63 - start.len() - 3 * n;
            (b"[],", n, pad, b"\"]}".to_vec())
        }
        "junk" => (b"[],", (MAX_RESPONSE - 64) / 3, 0, b"0]}".to_vec()),
        _ => (b"x", MAX_RESPONSE - 64, 0, b"\"]}".to_vec()),
    };
    let mut start = start;
    if kind == "string" {
        start.push(b'"');
    }
    let len = start.len() + unit.len() * n + pad + tail.len();
    let mut head = Vec::new();
    proto::write_preamble(&mut head).unwrap();
    let hello = Response::Hello {
        version: proto::PROTO_VERSION,
        nettune_version: "0.1.0".into(),
        caps: vec![],
    };
    proto::write_frame(&mut head, &hello, MAX_RESPONSE).unwrap();
    let gate = head.len();
    let q = Request::Inspect {
        root: None,
        iface: vec![],
    };
    let mut sent = Vec::new();
    proto::write_preamble(&mut sent).unwrap();
    proto::write_frame(&mut sent, &Request::Hello, proto::MAX_REQUEST).unwrap();
    proto::write_frame(&mut sent, &q, proto::MAX_REQUEST).unwrap();
    head.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
    head.extend_from_slice(&start);
    let (req_r, req_w) = std::io::pipe().unwrap();
    let out = Gen {
        requests: req_r,
        wait: sent.len(),
        gate,
        head,
        unit,
        n,
        pad,
        tail,
        at: 0,
    };
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
    match a.json(&q, Duration::from_secs(300)) {
        Ok(_) => format!("decoded ({} MiB answer)", len >> 20),
        Err(e) => format!("refused: {e}"),
    }
}

fn main() {
    let kind = std::env::args().nth(1).unwrap_or_else(|| "values".into());
    let hosts: usize = std::env::args()
        .nth(2)
        .and_then(|h| h.parse().ok())
        .unwrap_or(1);
    let before = hwm_kib();
    let outcomes: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..hosts).map(|_| s.spawn(|| one(&kind))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let after = hwm_kib();
    println!(
        "{kind} x {hosts}: {} ; peak RSS {} MiB -> {} MiB",
        outcomes.first().cloned().unwrap_or_default(),
        before / 1024,
        after / 1024
    );
    std::process::exit(0);
}
