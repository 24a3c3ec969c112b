//! Agent sessions over in-memory pipes and fake agents.

use super::*;
use crate::serve::serve;
use std::io::pipe;

/// An agent served by [`serve`] on a thread, over two OS pipes.
fn in_memory(version: &'static str) -> Agent {
    let (mut req_r, req_w) = pipe().unwrap();
    let (resp_r, mut resp_w) = pipe().unwrap();
    std::thread::spawn(move || {
        let _ = serve(
            &mut req_r,
            &mut resp_w,
            version,
            &["inspect"],
            |q| match q {
                Request::Inspect { root, .. } => Response::Json {
                    value: serde_json::json!({ "root": root }),
                    code: 0,
                },
                Request::Verify { .. } => Response::Error {
                    kind: ErrorKind::Failed,
                    message: "no applied plan in force in /var/lib/nettune".into(),
                },
                Request::Doctor { .. } => {
                    std::thread::sleep(Duration::from_secs(3));
                    Response::Json {
                        value: serde_json::Value::Null,
                        code: 0,
                    }
                }
                _ => Response::Error {
                    kind: ErrorKind::Unsupported,
                    message: "no".into(),
                },
            },
        );
    });
    Agent::over(
        "mem".into(),
        resp_r,
        req_w,
        None,
        None,
        "0.1.0",
        Duration::from_secs(5),
    )
    .unwrap()
}

#[test]
fn a_request_over_an_in_memory_pipe() {
    let mut a = in_memory("0.1.0");
    assert_eq!(a.peer().nettune_version, "0.1.0");
    assert_eq!(a.peer().caps, vec!["inspect".to_string()]);
    let (v, code) = a
        .json(
            &Request::Inspect {
                root: Some("/r".into()),
                iface: vec![],
            },
            Duration::from_secs(5),
        )
        .unwrap();
    assert_eq!((v, code), (serde_json::json!({"root": "/r"}), 0));
    let e = a
        .json(
            &Request::Verify {
                root: None,
                state_dir: None,
            },
            Duration::from_secs(5),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "mem: verify: no applied plan in force in /var/lib/nettune"
    );
    // the session goes on after an error answer
    assert!(a
        .json(
            &Request::Inspect {
                root: None,
                iface: vec![]
            },
            Duration::from_secs(5)
        )
        .is_ok());
}

#[test]
fn a_slow_answer_times_out_and_ends_the_session() {
    let mut a = in_memory("0.1.0");
    let q = Request::Doctor {
        seconds: None,
        root: None,
        profile: None,
        bdp: None,
        allowance: None,
    };
    let t = Instant::now();
    let e = a.request(&q, Duration::from_millis(200)).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(e, AgentError::Timeout { what: "doctor", .. }),
        "{e}"
    );
    assert!(matches!(
        a.request(&Request::Hello, Duration::from_secs(1)),
        Err(AgentError::Ended { .. })
    ));
}

#[test]
fn another_protocol_version_names_both() {
    let (resp_r, mut resp_w) = pipe().unwrap();
    let (_req_r, req_w) = pipe().unwrap();
    let mut pre = b"NTAG".to_vec();
    pre.extend_from_slice(&7u16.to_be_bytes());
    resp_w.write_all(&pre).unwrap();
    let e = Agent::over(
        "ssh b".into(),
        resp_r,
        req_w,
        None,
        None,
        "0.1.0",
        Duration::from_secs(5),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("ssh b: the agent speaks protocol v7, this nettune (0.1.0) v{PROTO_VERSION}; install the same nettune version there")
    );
}

#[test]
fn a_stranger_on_the_pipe_is_named_with_its_stderr() {
    let (resp_r, mut resp_w) = pipe().unwrap();
    let (_req_r, req_w) = pipe().unwrap();
    resp_w.write_all(b"Last login: yesterday\n").unwrap();
    let err = Arc::new(Mutex::new(
        b"ssh: connect to host b port 22: Connection refused\n".to_vec(),
    ));
    let e = Agent::over(
        "ssh b".into(),
        resp_r,
        req_w,
        None,
        Some(err),
        "0.1.0",
        Duration::from_secs(5),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("ssh b: not a nettune agent"), "{e}");
    assert!(
        e.ends_with("(its stderr: ssh: connect to host b port 22: Connection refused)"),
        "{e}"
    );
}

/// A fake agent's stdout: `head` (preamble and hello answer), then
/// `frame` over and over, for ever; counts the bytes taken from it.
struct Endless {
    head: Vec<u8>,
    frame: Vec<u8>,
    at: usize,
    taken: Arc<std::sync::atomic::AtomicUsize>,
    gone: Arc<AtomicBool>,
}

impl Drop for Endless {
    fn drop(&mut self) {
        self.gone.store(true, Ordering::SeqCst);
    }
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            let b = if self.at < self.head.len() {
                self.head[self.at]
            } else {
                let k = (self.at - self.head.len()) % self.frame.len();
                self.frame[k]
            };
            buf[n] = b;
            n += 1;
            self.at += 1;
        }
        self.taken.fetch_add(n, Ordering::SeqCst);
        Ok(n)
    }
}

fn frame_of(r: &Response) -> Vec<u8> {
    let mut f = Vec::new();
    proto::write_frame(&mut f, r, proto::MAX_RESPONSE).unwrap();
    f
}

fn hello_head() -> Vec<u8> {
    let mut head = Vec::new();
    proto::write_preamble(&mut head).unwrap();
    head.extend(frame_of(&Response::Hello {
        version: PROTO_VERSION,
        nettune_version: "0.1.0".into(),
        caps: vec![],
    }));
    head
}

/// Issue 35: an agent that writes answers nobody asked for, without
/// end. The controller reads nothing ahead (at most the first byte of
/// the unasked frame, counted at the source) and fails the host.
#[test]
fn unasked_frames_are_not_read_ahead_and_fail_the_host() {
    let head = hello_head();
    let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let gone = Arc::new(AtomicBool::new(false));
    let out = Endless {
        head: head.clone(),
        frame: frame_of(&Response::Json {
            value: serde_json::json!({"junk": "x".repeat(4096)}),
            code: 0,
        }),
        at: 0,
        taken: Arc::clone(&taken),
        gone: Arc::clone(&gone),
    };
    let (_req_r, req_w) = pipe().unwrap();
    let mut a = Agent::over(
        "fake".into(),
        out,
        req_w,
        None,
        None,
        "0.1.0",
        Duration::from_secs(5),
    )
    .unwrap();
    // Until the reader has ended (it drops the fake's stdout), with no
    // request waiting, so the order is certain; a reader that reads
    // ahead is caught once it has taken a MiB more than it was asked for.
    let until = Instant::now() + Duration::from_secs(60);
    while !gone.load(Ordering::SeqCst)
        && taken.load(Ordering::SeqCst) <= head.len() + (1 << 20)
        && Instant::now() < until
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(gone.load(Ordering::SeqCst), "the reader read on");
    let e = a
        .request(&Request::Hello, Duration::from_secs(30))
        .unwrap_err();
    assert!(
        matches!(
            e,
            AgentError::Proto {
                source: ProtoError::Unsolicited,
                ..
            }
        ),
        "{e}"
    );
    // The reader has ended: what it took is the head and one byte.
    assert_eq!(taken.load(Ordering::SeqCst), head.len() + 1);
}

/// Issue 35: a 64 MiB-class answer of tiny JSON values is refused by
/// its count before it is decoded, and fails the host.
#[test]
fn an_answer_of_too_many_values_is_not_decoded() {
    let (resp_r, mut resp_w) = pipe().unwrap();
    let (mut req_r, req_w) = pipe().unwrap();
    std::thread::spawn(move || {
        let _ = resp_w.write_all(&hello_head());
        // Answer the hello, then one hostile answer to the next request.
        let _ = proto::read_preamble(&mut req_r);
        let _ = proto::read_frame(&mut req_r, MAX_REQUEST);
        let _ = proto::read_frame(&mut req_r, MAX_REQUEST);
        let junk = format!(
            r#"{{"type":"json","code":0,"value":[{}0]}}"#,
            "[],".repeat(proto::MAX_RESPONSE_VALUES)
        );
        let mut f = u32::try_from(junk.len()).unwrap().to_be_bytes().to_vec();
        f.extend_from_slice(junk.as_bytes());
        let _ = resp_w.write_all(&f);
    });
    let mut a = Agent::over(
        "fake".into(),
        resp_r,
        req_w,
        None,
        None,
        "0.1.0",
        Duration::from_secs(30),
    )
    .unwrap();
    let q = Request::Inspect {
        root: None,
        iface: vec![],
    };
    let e = a.json(&q, Duration::from_secs(30)).unwrap_err();
    assert!(
        matches!(
            e,
            AgentError::Proto {
                source: ProtoError::TooComplex { .. },
                ..
            }
        ),
        "{e}"
    );
}

/// A pipe's writing end that, once `slow` is set, takes 200 ms per write
/// and counts what it finished writing.
struct SlowWriter {
    inner: std::io::PipeWriter,
    slow: Arc<AtomicBool>,
    written: Arc<std::sync::atomic::AtomicUsize>,
}

impl Write for SlowWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.slow.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(200));
        }
        let n = self.inner.write(b)?;
        if self.slow.load(Ordering::SeqCst) {
            self.written.fetch_add(n, Ordering::SeqCst);
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Dropping a session writes its `Shutdown` before it returns: a
/// controller that exits right after (`nettune fleet apply`) used to cut
/// it off, and a guest's agent, which cannot always see the socket close,
/// then read the next session's bytes as its own.
#[test]
fn dropping_a_session_waits_for_its_shutdown_to_be_written() {
    let (mut req_r, req_w) = pipe().unwrap();
    let (resp_r, mut resp_w) = pipe().unwrap();
    let (ended_tx, ended) = mpsc::channel();
    std::thread::spawn(move || {
        let end = serve(&mut req_r, &mut resp_w, "0.1.0", &[], |_| Response::Error {
            kind: ErrorKind::Unsupported,
            message: "no".into(),
        });
        let _ = ended_tx.send(end.ok());
    });
    let slow = Arc::new(AtomicBool::new(false));
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let w = SlowWriter {
        inner: req_w,
        slow: Arc::clone(&slow),
        written: Arc::clone(&written),
    };
    let a = Agent::over(
        "mem".into(),
        resp_r,
        w,
        None,
        None,
        "0.1.0",
        Duration::from_secs(5),
    )
    .unwrap();
    slow.store(true, Ordering::SeqCst);
    drop(a);
    assert!(
        written.load(Ordering::SeqCst) > 0,
        "drop returned before the Shutdown frame was written"
    );
    assert_eq!(
        ended.recv_timeout(Duration::from_secs(10)).unwrap(),
        Some(crate::serve::End::Shutdown)
    );
}
