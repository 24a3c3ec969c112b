//! The BPF-counting watcher closes its perf sampling events between
//! sampling windows (a disabled event still leaves perf's probe registered
//! on skb:kfree_skb, which every drop pays for: bench/RESULTS.md, issue
//! 39), and opens them again for the next window.
//!
//! Counted from the outside: the process's descriptors that are perf
//! events (`/proc/self/fd/N` -> `anon_inode:[perf_event]`). One test in its
//! own binary, so no other test opens perf events meanwhile. Needs root
//! (BPF and perf); skips otherwise, except as root under `CI=true`.

use nettune_host::drops::{Counting, DropWatcher, Sampling, WINDOW_BUDGET};
use nettune_host::Root;

/// Descriptors of this process that are perf events.
fn perf_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|t| t.to_string_lossy() == "anon_inode:[perf_event]")
        .count()
}

/// `n` UDP datagrams to a closed loopback port: each a NO_SOCKET drop.
fn drops(n: u64) {
    // a port that was free a moment ago: nothing listens there
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("bind")
        .port();
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    for _ in 0..n {
        let _ = s.send_to(b"x", ("127.0.0.1", port));
    }
}

fn must_run() -> bool {
    // the effective uid, from /proc (this crate has no libc)
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false);
    root && std::env::var("CI").as_deref() == Ok("true")
}

#[test]
fn sampling_events_are_closed_between_windows() {
    let mut w = match DropWatcher::open(&Root::live(), Sampling::Adaptive) {
        Ok(w) if w.counting() == Counting::Bpf => w,
        Ok(_) => {
            assert!(!must_run(), "BPF counting refused as root in CI");
            eprintln!("skipped: the BPF counter was refused, so there are no windows");
            return;
        }
        Err(e) => {
            assert!(!must_run(), "watcher refused as root in CI: {e}");
            eprintln!("skipped: {e}");
            return;
        }
    };
    let cpus = w.cpus();
    assert!(cpus >= 1);
    // a window is open from the start: one event per CPU
    assert_eq!(perf_fds(), cpus, "events while the first window is open");
    // far more drops in one drain than a window allows: the window closes
    drops(WINDOW_BUDGET * 5);
    w.drain();
    assert_eq!(perf_fds(), 0, "events left open between windows");
    // back-to-back drains see few drops (whatever else the machine
    // drops meanwhile): a window opens again within a few, with new events
    for _ in 0..100 {
        w.drain();
        if perf_fds() > 0 {
            break;
        }
    }
    assert_eq!(perf_fds(), cpus, "events of the reopened window");
    drop(w);
    assert_eq!(perf_fds(), 0, "events after the watcher is gone");
}
