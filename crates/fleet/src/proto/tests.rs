use super::*;

#[test]
fn values_are_counted_outside_strings() {
    assert_eq!(json_values(b"1"), 1);
    assert_eq!(json_values(b"[1,2,3]"), 4);
    assert_eq!(json_values(br#"{"a":[1],"b":"x,y:[{"}"#), 6);
    assert_eq!(json_values(br#"["a\"b,c"]"#), 2);
    let junk = format!(r#"{{"type":"json","value":[{}]}}"#, "[],".repeat(1 << 20));
    let mut frame = Vec::new();
    frame.extend_from_slice(&u32::try_from(junk.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(junk.as_bytes());
    let e = read_response(&mut frame.as_slice()).unwrap_err();
    assert!(matches!(e, ProtoError::TooComplex { .. }), "{e}");
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// Issue 35: the answers of all hosts together hold at most the
/// budget while read; one that cannot fit fails at once, unread.
#[test]
fn answers_in_flight_stay_within_one_budget_for_all_hosts() {
    let b = Budget::new(1000);
    let a = b.take(600, Duration::ZERO).unwrap();
    let e = b.take(600, Duration::from_millis(20)).unwrap_err();
    assert!(
        matches!(
            e,
            ProtoError::OverBudget {
                need: 600,
                total: 1000
            }
        ),
        "{e}"
    );
    drop(a);
    drop(b.take(600, Duration::ZERO).unwrap());
    assert!(matches!(
        b.take(1001, Duration::from_secs(60)),
        Err(ProtoError::OverBudget { .. })
    ));

    // 8 readers of a 300-byte answer (cost 750) share 1000 bytes: each
    // waits for the one before it, and all are decoded.
    let body = format!(
        r#"{{"type":"json","code":0,"value":"{}"}}"#,
        "x".repeat(265)
    );
    let f = frame(body.as_bytes());
    assert_eq!(f.len(), 304);
    let b = Budget::new(1000);
    let decoded = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    read_response_within(&mut f.as_slice(), &b, Duration::from_secs(600)).is_ok()
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or(false))
            .filter(|ok| *ok)
            .count()
    });
    assert_eq!(decoded, 8);
    assert_eq!(b.peak(), 750);

    // A frame that can never fit is refused before its body is read.
    let tiny = Budget::new(100);
    let e = read_response_within(&mut f.as_slice(), &tiny, Duration::from_secs(60)).unwrap_err();
    assert!(
        matches!(
            e,
            ProtoError::OverBudget {
                need: 750,
                total: 100
            }
        ),
        "{e}"
    );
    // An answer at the size cap fits the global budget.
    assert!(MAX_RESPONSE * ANSWER_COST.0 / ANSWER_COST.1 <= MAX_ANSWERS_IN_FLIGHT);
}

#[test]
fn a_request_round_trips_through_a_frame() {
    let r = Request::Plan {
        profile: "throughput".into(),
        root: Some("/tmp/x".into()),
        iface: vec!["eth0".into()],
        cpus: None,
        exclude_cpus: Some("2-3".into()),
        bdp: None,
    };
    let mut buf = Vec::new();
    write_frame(&mut buf, &r, MAX_REQUEST).unwrap();
    assert_eq!(
        u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize,
        buf.len() - 4
    );
    let back: Request = read_msg(&mut buf.as_slice(), MAX_REQUEST).unwrap();
    assert_eq!(back, r);
}

#[test]
fn the_wire_names_are_stable() {
    let j = serde_json::to_string(&Request::Inspect {
        root: None,
        iface: vec![],
    })
    .unwrap();
    assert_eq!(j, r#"{"type":"inspect","root":null,"iface":[]}"#);
    let r: Request = serde_json::from_str(r#"{"type":"inspect"}"#).unwrap();
    assert_eq!(
        r,
        Request::Inspect {
            root: None,
            iface: vec![]
        }
    );
    let e = serde_json::to_string(&Response::Error {
        kind: ErrorKind::TooLarge,
        message: "m".into(),
    })
    .unwrap();
    assert_eq!(e, r#"{"type":"error","kind":"too_large","message":"m"}"#);
    assert!(serde_json::from_str::<Request>(r#"{"type":"format_disk"}"#).is_err());
    // An apply without a deadline is the same frame as before it existed.
    let a: Request =
        serde_json::from_str(r#"{"type":"apply","plan":{},"confirm_within":60}"#).unwrap();
    assert!(matches!(
        a,
        Request::Apply {
            confirm_within: Some(60),
            ..
        }
    ));
    let a = Request::Apply {
        plan: serde_json::json!({}),
        root: None,
        state_dir: None,
        force: false,
        replan: false,
        confirm_within: None,
        dry_run: false,
    };
    assert!(!serde_json::to_string(&a).unwrap().contains("confirm"));
    let c: Request = serde_json::from_str(r#"{"type":"confirm","generation":7}"#).unwrap();
    assert_eq!(c.name(), "confirm");
    assert!(serde_json::from_str::<Request>(r#"{"type":"inspect","rot":"/"}"#).is_err());
}

#[test]
fn the_bench_requests_have_stable_wire_names() {
    let c: Request = serde_json::from_str(r#"{"type":"clock"}"#).unwrap();
    assert_eq!(c, Request::Clock);
    let s: Request = serde_json::from_str(r#"{"type":"serve"}"#).unwrap();
    assert_eq!(
        s,
        Request::Serve {
            port: 0,
            max_duration: None,
            lifetime: None,
            token: None,
            clients: None
        }
    );
    assert_eq!(
        serde_json::to_string(&Request::StopServe).unwrap(),
        r#"{"type":"stop_serve"}"#
    );
    let b: Request = serde_json::from_str(
        r#"{"type":"bench","server":"10.0.0.1","args":["--test","tcp-rr"],"start_at_unix_ns":7}"#,
    )
    .unwrap();
    assert_eq!(b.name(), "bench");
    assert!(matches!(
        b,
        Request::Bench {
            start_at_unix_ns: Some(7),
            ..
        }
    ));
}

#[test]
fn an_oversized_frame_is_refused_before_allocation() {
    let mut buf = Vec::new();
    buf.extend_from_slice(&(u32::MAX).to_be_bytes());
    match read_frame(&mut buf.as_slice(), MAX_REQUEST) {
        Err(ProtoError::TooLarge { len, max }) => {
            assert_eq!(len, u32::MAX as usize);
            assert_eq!(max, MAX_REQUEST);
        }
        r => panic!("{r:?}"),
    }
    // exactly the limit is fine, one more is not
    let ok = vec![b' '; MAX_REQUEST];
    let mut f = (MAX_REQUEST as u32).to_be_bytes().to_vec();
    f.extend_from_slice(&ok);
    assert_eq!(
        read_frame(&mut f.as_slice(), MAX_REQUEST).unwrap().len(),
        MAX_REQUEST
    );
    let big = "x".repeat(MAX_REQUEST);
    assert!(matches!(
        write_frame(&mut Vec::new(), &big, MAX_REQUEST),
        Err(ProtoError::TooLarge { .. })
    ));
}

#[test]
fn a_short_frame_or_preamble_is_closed_and_a_stranger_is_named() {
    let mut f = 100u32.to_be_bytes().to_vec();
    f.extend_from_slice(b"{\"type\"");
    assert!(matches!(
        read_frame(&mut f.as_slice(), MAX_REQUEST),
        Err(ProtoError::Closed)
    ));
    assert!(matches!(
        read_preamble(&mut &b"NTA"[..]),
        Err(ProtoError::Closed)
    ));
    let e = read_preamble(&mut &b"Welcome to host\n"[..]).unwrap_err();
    assert!(e.to_string().contains("Welcom"), "{e}");
    let mut p = Vec::new();
    write_preamble(&mut p).unwrap();
    assert_eq!(read_preamble(&mut p.as_slice()).unwrap(), PROTO_VERSION);
}
