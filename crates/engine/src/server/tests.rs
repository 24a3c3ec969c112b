//! The server's pools and limits, without a network beyond loopback.

use super::*;

/// The capabilities a server at `hook` offers in its hello.
fn offered(hook: Option<crate::diagnosis::DoctorHook>) -> Vec<String> {
    let server = Server::bind(ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        dual_stack: false,
        token: None,
        limits: Limits::default(),
        max_sessions: 1,
        root: Root::new("/"),
        log: false,
        doctor: hook,
    })
    .unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.serve());
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    proto::write_preamble(&mut s).unwrap();
    proto::read_preamble(&mut s).unwrap();
    match proto::read_msg(&mut s, 1 << 20).unwrap() {
        Msg::Hello { caps, .. } => caps,
        other => panic!("expected hello, got {}", other.name()),
    }
}

/// `bench --doctor` runs the rules through the caller's hook: a server
/// given none does not claim to run them.
#[test]
fn doctor_is_offered_only_with_a_hook() {
    let cap = crate::diagnosis::CAP.to_string();
    assert!(!offered(None).contains(&cap));
    let hook = crate::diagnosis::DoctorHook::new(|_, _, _| model::findings::Report {
        schema_version: model::findings::REPORT_SCHEMA_VERSION,
        findings: Vec::new(),
        skipped: Vec::new(),
    });
    let caps = offered(Some(hook));
    assert!(caps.contains(&cap), "{caps:?}");
    assert!(caps.iter().any(|c| c == "tcp-stream"), "{caps:?}");
}

fn shared(total: u32, per_prefix: u32) -> Arc<Shared> {
    Arc::new(Shared {
        cfg: ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            dual_stack: false,
            token: None,
            limits: Limits {
                max_unauthenticated: total,
                max_unauthenticated_per_prefix: per_prefix,
                ..Limits::default()
            },
            max_sessions: 1,
            root: Root::new("/"),
            log: false,
            doctor: None,
        },
        per_client: Mutex::new(HashMap::new()),
        preauth: Mutex::new(Preauth::default()),
        sessions: AtomicUsize::new(0),
        conn_rate: Mutex::new(admission::ConnRate::default()),
        log_rate: Mutex::new(admission::LogRate::new(Instant::now())),
        budget: Mutex::new(admission::Budget::default()),
    })
}

#[test]
fn prefixes_are_ipv4_24_and_ipv6_64() {
    let p = |s: &str| preauth_prefix(s.parse().unwrap()).to_string();
    assert_eq!(p("192.0.2.77"), "192.0.2.0");
    assert_eq!(p("::ffff:192.0.2.77"), "192.0.2.0");
    assert_eq!(p("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::");
}

#[test]
fn a_full_pool_evicts_its_oldest_and_a_full_prefix_its_own_oldest() {
    let sh = shared(4, 2);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let peer = |s: &str| -> SocketAddr { format!("{s}:1").parse().unwrap() };
    let mut slots = Vec::new();
    let mut take = |from: &str| {
        let (slot, ev) = PreauthSlot::take(&sh, peer(from), &c).unwrap();
        slots.push(slot);
        ev.into_iter()
            .map(|(e, _)| e.peer.ip().to_string())
            .collect::<Vec<_>>()
    };
    assert!(take("10.0.1.1").is_empty());
    assert!(take("10.0.1.2").is_empty());
    // The prefix is at its share: its own oldest goes, not another's.
    assert!(take("10.0.2.1").is_empty());
    assert_eq!(take("10.0.1.3"), ["10.0.1.1"]);
    assert!(take("10.0.3.1").is_empty());
    // The pool is full (4): the oldest of all goes.
    assert_eq!(take("10.0.4.1"), ["10.0.1.2"]);
    assert_eq!(take("10.0.5.1"), ["10.0.2.1"]);
    let p = sh.preauth.lock().unwrap();
    assert_eq!(p.queue.len(), 4);
    assert_eq!(p.per_prefix.values().sum::<u32>(), 4);
    drop(p);
    // Slots given back (also of evicted connections) leave the pool empty.
    drop(slots);
    let p = sh.preauth.lock().unwrap();
    assert!(p.queue.is_empty() && p.per_prefix.is_empty());
}

/// Issue 35: a connection that has sent its preamble and proof is never
/// evicted, however many arrive after it; when every unfinished handshake
/// of the prefix (or of the pool) has proved itself, the new one is refused.
#[test]
fn proved_handshakes_are_never_evicted() {
    let sh = shared(4, 2);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let peer = |s: &str| -> SocketAddr { format!("{s}:1").parse().unwrap() };
    let (slow, ev) = PreauthSlot::take(&sh, peer("10.0.1.1"), &c).unwrap();
    assert!(ev.is_empty());
    slow.protect(true);
    let mut slots = Vec::new();
    // 500 newer connections from its own prefix and others: the prefix's
    // unproved one and the pool's oldest unproved ones go, never `slow`.
    for i in 0..500u32 {
        let from = format!("10.0.{}.{}", 1 + i % 20, 2 + i % 200);
        match PreauthSlot::take(&sh, peer(&from), &c) {
            Ok((s, ev)) => {
                assert!(ev.iter().all(|(e, _)| e.id != 0), "the proved one evicted");
                slots.push(s);
            }
            Err(e) => panic!("{e}"),
        }
        let p = sh.preauth.lock().unwrap();
        assert!(p.queue.iter().any(|e| e.id == 0 && e.protected));
        assert!(p.queue.len() <= 4);
    }
    // Its prefix full of proved handshakes: a new one is refused, not
    // an old one evicted.
    slots.clear();
    let (other, _) = PreauthSlot::take(&sh, peer("10.0.1.9"), &c).unwrap();
    other.protect(true);
    assert!(matches!(
        PreauthSlot::take(&sh, peer("10.0.1.10"), &c),
        Err(Busy::Protected(_))
    ));
    let p = sh.preauth.lock().unwrap();
    assert_eq!(p.queue.len(), 2);
}

/// Without a token anyone can send a preamble: at most half the pool and
/// half a prefix's share are kept from eviction that way, so a flood of
/// preambles cannot lock newer connections out.
#[test]
fn unproved_preambles_are_kept_only_within_a_quota() {
    let sh = shared(4, 2);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let peer = |s: &str| -> SocketAddr { format!("{s}:1").parse().unwrap() };
    let mut slots = Vec::new();
    for i in 0..50u32 {
        let from = format!("10.0.{}.1", i % 5);
        let (s, _) = PreauthSlot::take(&sh, peer(&from), &c).unwrap();
        s.protect(false);
        slots.push(s);
        let p = sh.preauth.lock().unwrap();
        assert!(p.queue.iter().filter(|e| e.protected).count() <= 2);
    }
}
