//! The controller's side: an [`Agent`] session over a transport's pipe.
//!
//! A reader thread turns the agent's stdout into messages on a channel and
//! a writer thread feeds its stdin, so every call waits under a total
//! deadline and a hung agent (or ssh) is killed, never waited on.

use crate::proto::{self, ErrorKind, ProtoError, Request, Response, MAX_REQUEST, PROTO_VERSION};
use crate::transport::{Transport, TransportError};
use model::text::printable_capped;
use std::io::{Read, Write};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Characters of the agent's stderr quoted in an error.
const STDERR_SHOWN: usize = 600;
/// How long a closing agent may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// A session that failed. Every variant names the agent
/// ([`Transport::describe`]); those where the agent's side may have said
/// why carry the end of its stderr (ssh's own reason, a missing binary).
#[derive(Debug, Error)]
pub enum AgentError {
    /// The transport could not start.
    #[error("{agent}: {source}")]
    Transport {
        /// The agent.
        agent: String,
        /// Why.
        #[source]
        source: TransportError,
    },
    /// The agent speaks another protocol version.
    #[error("{agent}: the agent speaks protocol v{theirs}{}, this nettune ({ours_nettune}) v{ours}; install the same nettune version there", theirs_nettune.as_deref().map(|v| format!(" (nettune {v})")).unwrap_or_default())]
    Version {
        /// The agent.
        agent: String,
        /// [`PROTO_VERSION`].
        ours: u16,
        /// The agent's.
        theirs: u16,
        /// This build's version.
        ours_nettune: String,
        /// The agent's nettune version, when it said.
        theirs_nettune: Option<String>,
    },
    /// The pipe closed or carried something else than the protocol.
    #[error("{agent}: {source}{}", stderr_suffix(stderr))]
    Proto {
        /// The agent.
        agent: String,
        /// What broke.
        #[source]
        source: ProtoError,
        /// The end of its stderr.
        stderr: String,
    },
    /// No answer within the deadline (the agent was killed).
    #[error(
        "{agent}: no answer to {what} within {after:?}{}",
        stderr_suffix(stderr)
    )]
    Timeout {
        /// The agent.
        agent: String,
        /// The request.
        what: &'static str,
        /// The deadline.
        after: Duration,
        /// The end of its stderr.
        stderr: String,
    },
    /// The agent answered with an error.
    #[error("{agent}: {what}: {}", printable_capped(message, 2000))]
    Remote {
        /// The agent.
        agent: String,
        /// The request.
        what: &'static str,
        /// Its kind.
        kind: ErrorKind,
        /// Its message.
        message: String,
    },
    /// An answer of the wrong type.
    #[error("{agent}: {what}: unexpected answer {got}")]
    Unexpected {
        /// The agent.
        agent: String,
        /// The request.
        what: &'static str,
        /// The answer's type.
        got: &'static str,
    },
    /// A previous call timed out or broke the session.
    #[error("{agent}: the session ended earlier")]
    Ended {
        /// The agent.
        agent: String,
    },
}

fn stderr_suffix(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (its stderr: {s})")
    }
}

/// What the reader thread passes on.
enum Incoming {
    Preamble(u16),
    Msg(Response),
    End(ProtoError),
}

/// What the agent said about itself in its `hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// Its protocol version.
    pub version: u16,
    /// Its nettune version.
    pub nettune_version: String,
    /// The requests it serves.
    pub caps: Vec<String>,
}

/// A session with one agent. Dropping it ends the session: `shutdown`,
/// stdin closed, and the transport's process killed if it has not exited
/// within a second.
#[derive(Debug)]
pub struct Agent {
    name: String,
    child: Option<Child>,
    tx: Option<Sender<Vec<u8>>>,
    /// Set while a request waits for its answer; the reader takes it when
    /// an answer's first byte arrives.
    waiting: Arc<AtomicBool>,
    rx: Receiver<IncomingBox>,
    stderr: Option<Arc<Mutex<Vec<u8>>>>,
    peer: PeerInfo,
    ended: bool,
    /// The thread writing frames: drop waits (up to [`EXIT_GRACE`]) for it
    /// to write the last ones (`Shutdown`) and close its end, so a process
    /// that exits right after does not cut them off. Over a guest's port
    /// the agent cannot always see end-of-file (a quick reconnect hides
    /// it); `Shutdown` is what ends it for sure.
    writer: Option<std::thread::JoinHandle<()>>,
}

/// [`Incoming`] with a Debug impl that does not print reports.
struct IncomingBox(Incoming);

impl std::fmt::Debug for IncomingBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Incoming")
    }
}

impl Agent {
    /// Start the agent with `transport` and shake hands within `deadline`.
    /// `nettune_version` is this build's, named in a version mismatch.
    pub fn connect(
        transport: &dyn Transport,
        nettune_version: &str,
        deadline: Duration,
    ) -> Result<Agent, AgentError> {
        let name = transport.describe();
        let pipe = transport.spawn().map_err(|source| AgentError::Transport {
            agent: name.clone(),
            source,
        })?;
        Agent::over(
            name,
            pipe.stdout,
            pipe.stdin,
            pipe.child,
            pipe.stderr,
            nettune_version,
            deadline,
        )
    }

    /// A session over any pipe (`child`, when given, is killed on drop).
    pub fn over(
        name: String,
        mut reader: impl Read + Send + 'static,
        mut writer: impl Write + Send + 'static,
        child: Option<Child>,
        stderr: Option<Arc<Mutex<Vec<u8>>>>,
        nettune_version: &str,
        deadline: Duration,
    ) -> Result<Agent, AgentError> {
        // One slot: the reader holds at most the preamble and one answer.
        let (in_tx, rx) = mpsc::sync_channel::<IncomingBox>(1);
        // The hello's answer is awaited from the start: the handshake's
        // request is always the first.
        let waiting = Arc::new(AtomicBool::new(true));
        let asked = Arc::clone(&waiting);
        std::thread::spawn(move || {
            let first = match proto::read_preamble(&mut reader) {
                Ok(v) => Incoming::Preamble(v),
                Err(e) => Incoming::End(e),
            };
            let ok = matches!(first, Incoming::Preamble(_));
            if in_tx.send(IncomingBox(first)).is_err() || !ok {
                return;
            }
            loop {
                let m = match next_answer(&mut reader, &asked) {
                    Ok(m) => Incoming::Msg(m),
                    Err(e) => Incoming::End(e),
                };
                let end = matches!(m, Incoming::End(_));
                if in_tx.send(IncomingBox(m)).is_err() || end {
                    return;
                }
            }
        });
        let (tx, out_rx) = mpsc::channel::<Vec<u8>>();
        let writer_thread = std::thread::spawn(move || {
            if proto::write_preamble(&mut writer).is_err() {
                return;
            }
            for frame in out_rx {
                if writer
                    .write_all(&frame)
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    return;
                }
            }
        });
        let mut a = Agent {
            name,
            child,
            tx: Some(tx),
            waiting,
            rx,
            stderr,
            peer: PeerInfo {
                version: 0,
                nettune_version: String::new(),
                caps: Vec::new(),
            },
            ended: false,
            writer: Some(writer_thread),
        };
        a.handshake(nettune_version, deadline)?;
        Ok(a)
    }

    fn handshake(&mut self, ours_nettune: &str, deadline: Duration) -> Result<(), AgentError> {
        let end = Instant::now() + deadline;
        // Its answer is already awaited (set at construction): setting the
        // flag again here could race the reader past the hello's answer.
        self.send(&Request::Hello, false)?;
        let theirs = match self.next("hello", end, deadline)? {
            Incoming::Preamble(v) => v,
            _ => return Err(self.unexpected("hello", "message before the preamble")),
        };
        if theirs != PROTO_VERSION {
            // Its error frame (if any) may not be readable; its version in
            // the preamble is what counts.
            self.ended = true;
            return Err(AgentError::Version {
                agent: self.name.clone(),
                ours: PROTO_VERSION,
                theirs,
                ours_nettune: ours_nettune.to_string(),
                theirs_nettune: None,
            });
        }
        match self.answer("hello", end, deadline)? {
            Response::Hello {
                version,
                nettune_version,
                caps,
            } => {
                self.peer = PeerInfo {
                    version,
                    nettune_version,
                    caps,
                };
                Ok(())
            }
            r => Err(self.unexpected("hello", kind_of(&r))),
        }
    }

    /// The agent as people name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the agent said in its `hello`.
    pub fn peer(&self) -> &PeerInfo {
        &self.peer
    }

    /// Send `req` and wait for its answer within `deadline` (the whole
    /// round trip). After a timeout the agent is killed and the session
    /// is over.
    pub fn request(&mut self, req: &Request, deadline: Duration) -> Result<Response, AgentError> {
        if self.ended {
            return Err(AgentError::Ended {
                agent: self.name.clone(),
            });
        }
        let end = Instant::now() + deadline;
        self.send(req, true)?;
        self.answer(req.name(), end, deadline)
    }

    /// [`request`](Self::request) for a command's JSON document and exit
    /// status; an agent's error answer is [`AgentError::Remote`].
    pub fn json(
        &mut self,
        req: &Request,
        deadline: Duration,
    ) -> Result<(serde_json::Value, u8), AgentError> {
        match self.request(req, deadline)? {
            Response::Json { value, code } => Ok((value, code)),
            Response::Error { kind, message } => Err(AgentError::Remote {
                agent: self.name.clone(),
                what: req.name(),
                kind,
                message,
            }),
            r => Err(self.unexpected(req.name(), kind_of(&r))),
        }
    }

    /// Queue `req` for the writer; `await_answer` marks an answer as
    /// awaited first (its answer cannot arrive earlier).
    fn send(&mut self, req: &Request, await_answer: bool) -> Result<(), AgentError> {
        let mut frame = Vec::new();
        proto::write_frame(&mut frame, req, MAX_REQUEST).map_err(|source| AgentError::Proto {
            agent: self.name.clone(),
            source,
            stderr: String::new(),
        })?;
        if await_answer {
            self.waiting.store(true, Ordering::SeqCst);
        }
        let sent = self.tx.as_ref().is_some_and(|t| t.send(frame).is_ok());
        if !sent {
            self.ended = true;
            return Err(self.proto_error(ProtoError::Closed));
        }
        Ok(())
    }

    fn answer(
        &mut self,
        what: &'static str,
        end: Instant,
        deadline: Duration,
    ) -> Result<Response, AgentError> {
        match self.next(what, end, deadline)? {
            Incoming::Msg(m) => Ok(m),
            _ => Err(self.unexpected(what, "a second preamble")),
        }
    }

    /// The next thing from the reader, or an error (the session then ends).
    fn next(
        &mut self,
        what: &'static str,
        end: Instant,
        deadline: Duration,
    ) -> Result<Incoming, AgentError> {
        let left = end.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(IncomingBox(Incoming::End(e))) => {
                self.ended = true;
                self.reap();
                Err(self.proto_error(e))
            }
            Ok(IncomingBox(i)) => Ok(i),
            Err(RecvTimeoutError::Timeout) => {
                self.ended = true;
                self.kill();
                Err(AgentError::Timeout {
                    agent: self.name.clone(),
                    what,
                    after: deadline,
                    stderr: self.stderr_text(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.ended = true;
                self.reap();
                Err(self.proto_error(ProtoError::Closed))
            }
        }
    }

    fn unexpected(&mut self, what: &'static str, got: &'static str) -> AgentError {
        self.ended = true;
        AgentError::Unexpected {
            agent: self.name.clone(),
            what,
            got,
        }
    }

    fn proto_error(&self, source: ProtoError) -> AgentError {
        AgentError::Proto {
            agent: self.name.clone(),
            source,
            stderr: self.stderr_text(),
        }
    }

    /// The last [`STDERR_SHOWN`] characters of the agent's stderr, one
    /// printable line.
    fn stderr_text(&self) -> String {
        let Some(s) = &self.stderr else {
            return String::new();
        };
        let bytes = s.lock().map(|b| b.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        let skip = text.chars().count().saturating_sub(STDERR_SHOWN);
        let tail: String = text.chars().skip(skip).collect();
        printable_capped(&tail, STDERR_SHOWN)
    }

    /// Give a child whose pipe closed a moment to exit (so its stderr is
    /// complete), then kill it.
    fn reap(&mut self) {
        if let Some(c) = &mut self.child {
            within_grace(|| matches!(c.try_wait(), Ok(Some(_))));
            // The stderr thread reads what was left in the pipe.
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.send(&Request::Shutdown, false);
        }
        // Closing stdin: the agent sees end of input.
        self.tx = None;
        if let Some(w) = self.writer.take() {
            within_grace(|| w.is_finished());
        }
        if let Some(c) = &mut self.child {
            if within_grace(|| matches!(c.try_wait(), Ok(Some(_)))) {
                self.child = None;
                return;
            }
        }
        self.kill();
    }
}

/// Poll `done` every 10 ms for up to [`EXIT_GRACE`]; whether it came true.
fn within_grace(mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + EXIT_GRACE;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The next answer on `reader`: while no request waits the reader blocks
/// on a single byte, so nothing is read ahead; a frame that starts while
/// no request waits fails the session ([`ProtoError::Unsolicited`]).
fn next_answer(reader: &mut impl Read, waiting: &AtomicBool) -> Result<Response, ProtoError> {
    let mut first = [0u8; 1];
    loop {
        match reader.read(&mut first) {
            Ok(0) => return Err(ProtoError::Closed),
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ProtoError::Io(e)),
        }
    }
    if !waiting.swap(false, Ordering::SeqCst) {
        return Err(ProtoError::Unsolicited);
    }
    proto::read_response(&mut first.as_slice().chain(reader))
}

fn kind_of(r: &Response) -> &'static str {
    match r {
        Response::Hello { .. } => "hello",
        Response::Json { .. } => "json",
        Response::Error { .. } => "error",
    }
}

#[cfg(test)]
mod tests;
