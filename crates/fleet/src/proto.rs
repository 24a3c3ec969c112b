//! The agent protocol: what `nettune agent --stdio` reads on stdin and writes
//! on stdout, whatever pipe carries it (a local child, `ip netns exec`, ssh,
//! `kubectl exec`).
//!
//! Both sides first send a 6-byte preamble, `NTAG` and a big-endian u16
//! protocol version, so a version mismatch or something that is not a
//! nettune agent (a login banner, a shell's error) is caught before any
//! message is parsed. Then every message is a big-endian u32 length followed
//! by that many bytes of JSON: a [`Request`] from the controller (at most
//! [`MAX_REQUEST`] bytes), a [`Response`] from the agent (at most
//! [`MAX_RESPONSE`]). The same conventions as the bench control protocol
//! (`engine::proto`, docs/engine.md); docs/fleet.md describes the messages.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Preamble magic.
pub const MAGIC: &[u8; 4] = b"NTAG";
/// Agent protocol version; bumped on any incompatible change. A new
/// request is not one: the agent lists it in its `hello`'s `caps`, and a
/// controller sends it only to agents that do (an older agent answers an
/// unknown `type` with `bad_request`).
pub const PROTO_VERSION: u16 = 1;
/// Largest request an agent accepts (as the bench server's client frames).
pub const MAX_REQUEST: usize = 256 * 1024;
/// Largest response a controller accepts (a snapshot or doctor report of a
/// large host; as the bench server's reports).
pub const MAX_RESPONSE: usize = 64 << 20;
/// Most JSON values and object keys one answer may hold, counted in its
/// text before it is decoded ([`json_values`]): serde decodes a tagged
/// message through a generic tree, tens of bytes per value, so a 64 MiB
/// answer of `[],[],...` cost 1.47 GB. At this cap the trees of one
/// answer stay within about 100 MiB whatever the text.
pub const MAX_RESPONSE_VALUES: usize = 1 << 20;

/// An error of the wire: the pipe, the preamble or a frame.
#[derive(Debug, Error)]
pub enum ProtoError {
    /// The pipe failed.
    #[error("agent pipe: {0}")]
    Io(#[from] io::Error),
    /// The other end closed the pipe (at a frame boundary or inside one).
    #[error("the agent pipe closed")]
    Closed,
    /// The first bytes were not `NTAG`: not a nettune agent.
    #[error("not a nettune agent (the first bytes were {0:?}, not \"NTAG\")")]
    NotAgent(String),
    /// A frame announced more bytes than the limit.
    #[error("a frame of {len} bytes, above the {max}-byte limit")]
    TooLarge {
        /// The announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A frame that is not the JSON of a message.
    #[error("a frame that is not a message: {0}")]
    Json(#[from] serde_json::Error),
    /// An answer holding more JSON values than [`MAX_RESPONSE_VALUES`].
    #[error("an answer of {values} JSON values, above the limit of {max}; not decoded")]
    TooComplex {
        /// Values counted (an upper bound).
        values: usize,
        /// The limit.
        max: usize,
    },
    /// The agent sent a frame while no request was waiting for one.
    #[error("the agent sent a frame no request asked for")]
    Unsolicited,
    /// The answers of all hosts being read at once would pass the budget.
    #[error("an answer costing {need} bytes to read did not fit the controller's budget of {total} bytes for all hosts' answers in flight")]
    OverBudget {
        /// Bytes this answer needs.
        need: usize,
        /// The budget.
        total: usize,
    },
}

/// A request from the controller. `root` is the directory standing for `/`
/// (a fixture or a capture; `None`: the agent's host), `state_dir` the
/// journal directory, as the CLI's `--root` and `--state-dir`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Who are you: answered with [`Response::Hello`].
    Hello,
    /// `nettune inspect --json`: the host snapshot.
    Inspect {
        /// `--root`.
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--iface` (all when empty).
        #[serde(default)]
        iface: Vec<String>,
    },
    /// `nettune doctor --json`: findings from a snapshot and sampled counters.
    Doctor {
        /// `--sample` in seconds on a live host (default 3).
        #[serde(default)]
        seconds: Option<f64>,
        /// `--root` (then no sampling: a capture's own samples).
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--profile`.
        #[serde(default)]
        profile: Option<String>,
        /// `--bdp RATE,RTT`.
        #[serde(default)]
        bdp: Option<String>,
        /// `--allowance RATE,PPS`.
        #[serde(default)]
        allowance: Option<String>,
    },
    /// `nettune plan --json`: the plan a profile makes for the host.
    Plan {
        /// `--profile` (a built-in name or a path on the agent's host).
        profile: String,
        /// `--root`.
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--iface`.
        #[serde(default)]
        iface: Vec<String>,
        /// `--cpus`.
        #[serde(default)]
        cpus: Option<String>,
        /// `--exclude-cpus`.
        #[serde(default)]
        exclude_cpus: Option<String>,
        /// `--bdp`.
        #[serde(default)]
        bdp: Option<String>,
    },
    /// `nettune apply --plan FILE --yes --json`: apply a plan (the JSON of
    /// `plan --json`) exactly as written, through the journal.
    Apply {
        /// The plan.
        plan: serde_json::Value,
        /// `--root`.
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--state-dir`.
        #[serde(default)]
        state_dir: Option<PathBuf>,
        /// `--force`: a plan made for another host, or over an unfinished apply.
        #[serde(default)]
        force: bool,
        /// `--replan`: re-plan the later phases after a channel change.
        #[serde(default)]
        replan: bool,
        /// Seconds the controller has to [`Request::Confirm`] the apply over
        /// a fresh connection before the host rolls it back by itself (set
        /// when the plan can cut the path, `tune::risk`; docs/fleet.md,
        /// "Confirm deadline"). `None`: no deadline.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confirm_within: Option<u32>,
        /// Write nothing: answer each change with the host's current value
        /// (`{"dry_run": true, "changes": [PreviewLine...]}`), after the same
        /// checks as the apply (`fleet apply` shows this before it applies).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
    },
    /// Confirm an apply made with `confirm_within`: it stays in force.
    Confirm {
        /// `--root`.
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--state-dir`.
        #[serde(default)]
        state_dir: Option<PathBuf>,
        /// The generation the apply answered with.
        generation: u32,
    },
    /// `nettune rollback [ID] --json`.
    Rollback {
        /// `--root`.
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--state-dir`.
        #[serde(default)]
        state_dir: Option<PathBuf>,
        /// The generation to roll back to (it and every newer one); the newest by default.
        #[serde(default)]
        id: Option<u32>,
        /// `--force`: close the generation even when some knobs cannot be restored.
        #[serde(default)]
        force: bool,
    },
    /// `nettune verify --json`: drift since the last apply.
    Verify {
        /// `--root`.
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--state-dir`.
        #[serde(default)]
        state_dir: Option<PathBuf>,
    },
    /// `nettune history --json`: the journal's generations.
    History {
        /// `--root`.
        #[serde(default)]
        root: Option<PathBuf>,
        /// `--state-dir`.
        #[serde(default)]
        state_dir: Option<PathBuf>,
    },
    /// End the session: the agent exits without answering.
    Shutdown,
    /// The agent's CLOCK_REALTIME, read as soon as the request arrives:
    /// `{"realtime_ns": N}` (ns since the epoch; `fleet bench`'s offsets).
    Clock,
    /// Start `nettune serve --json` on the agent's host (one per session);
    /// answered once it listens: `{"address", "port"}`. It stops with
    /// [`Request::StopServe`], the session's end or `lifetime`.
    Serve {
        /// `--port` (0: one the server picks, named in the answer).
        #[serde(default)]
        port: u16,
        /// `--max-duration` in seconds (the longest test it accepts).
        #[serde(default)]
        max_duration: Option<u64>,
        /// Seconds after which the agent stops it whatever happens.
        #[serde(default)]
        lifetime: Option<u64>,
        /// The token clients must prove (the child's `NETTUNE_TOKEN`, never argv).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
        /// Tests expected at once: `--max-tests-per-client` (several clients
        /// may share an address) and at least that many `--max-sessions`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clients: Option<u32>,
    },
    /// Stop the server [`Request::Serve`] started: `{"stopped": bool}`.
    StopServe,
    /// `nettune bench SERVER ARGS... --json [--start-at NS]` on the agent's
    /// host: the bench document (its `started_at_unix_ns` the flows' start).
    Bench {
        /// The server's address as this host reaches it.
        server: String,
        /// `nettune bench` flags (checked by its parser; not `--json-stream`,
        /// `--csv` or `--start-at`).
        #[serde(default)]
        args: Vec<String>,
        /// Start the flows at this instant of the agent's CLOCK_REALTIME.
        #[serde(default)]
        start_at_unix_ns: Option<u64>,
        /// The server's token (the child's `NETTUNE_TOKEN`, never argv).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
    /// Start watching the drops by reason of the agent's kernel
    /// (`skb:kfree_skb`, docs/drops.md) for one run: answered once the
    /// watcher runs, `{"watching": true}` (with `"replaced": true` when a
    /// watch was running: it is stopped first, its counts dropped), or
    /// `{"watching": false, "unavailable": LINE}` when it cannot (not root,
    /// no BPF or perf events). One watch per session: it stops with
    /// [`Request::DropsFinish`], a second `drops_start`, the session's end,
    /// or `lifetime`.
    DropsStart {
        /// Seconds after which the agent stops the watch whatever happens
        /// (absent or above [`DROPS_LIFETIME_MAX`]: that).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lifetime: Option<u64>,
    },
    /// Stop the watch [`Request::DropsStart`] started: its drops by reason
    /// (docs/schema/drops-run.json, `host` the agent's host name), or the
    /// line saying why there are none; an error when no watch was started
    /// in this session.
    DropsFinish,
}

/// The longest an agent keeps a drops watch ([`Request::DropsStart`]'s
/// `lifetime`), seconds.
pub const DROPS_LIFETIME_MAX: u64 = 24 * 3600;

impl Request {
    /// The request's name, as in its `type` (for messages).
    pub fn name(&self) -> &'static str {
        match self {
            Request::Hello => "hello",
            Request::Inspect { .. } => "inspect",
            Request::Doctor { .. } => "doctor",
            Request::Plan { .. } => "plan",
            Request::Apply { .. } => "apply",
            Request::Confirm { .. } => "confirm",
            Request::Rollback { .. } => "rollback",
            Request::Verify { .. } => "verify",
            Request::History { .. } => "history",
            Request::Shutdown => "shutdown",
            Request::Clock => "clock",
            Request::Serve { .. } => "serve",
            Request::StopServe => "stop_serve",
            Request::Bench { .. } => "bench",
            Request::DropsStart { .. } => "drops_start",
            Request::DropsFinish => "drops_finish",
        }
    }
}

/// An agent's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Response {
    /// The answer to [`Request::Hello`].
    Hello {
        /// [`PROTO_VERSION`] of the agent.
        version: u16,
        /// The agent's `nettune --version` number (e.g. `0.1.0`).
        nettune_version: String,
        /// The requests it serves (their `type`s).
        caps: Vec<String>,
    },
    /// The document the CLI's `--json` prints for the same command.
    Json {
        /// That document.
        value: serde_json::Value,
        /// The exit status the CLI gives with it (`verify`: 3 on drift;
        /// `doctor`: 0, 1 or 2 by the worst finding).
        #[serde(default)]
        code: u8,
    },
    /// The request failed; the agent keeps serving unless the frame stream broke.
    Error {
        /// What kind of failure.
        kind: ErrorKind,
        /// One line naming the file, knob or value (the CLI's own message).
        message: String,
    },
}

/// Kinds of [`Response::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The frame was not a request this agent knows.
    BadRequest,
    /// A frame above [`MAX_REQUEST`], or an answer above [`MAX_RESPONSE`].
    TooLarge,
    /// The controller speaks another protocol version.
    Version,
    /// The agent does not serve this request.
    Unsupported,
    /// The command ran and failed (its error message).
    Failed,
    /// An `apply` failed because a knob its plan writes is absent on the
    /// host (nothing of the plan stays applied): `nettune apply`'s exit
    /// status `host::apply::EXIT_KNOB_ABSENT`.
    KnobAbsent,
    /// An `apply` was refused for want of privileges (the agent is not
    /// root): `nettune apply`'s exit status `host::apply::EXIT_NOT_ROOT`.
    NotRoot,
}

/// Send the preamble.
pub fn write_preamble(w: &mut impl Write) -> io::Result<()> {
    let mut b = [0u8; 6];
    b[..4].copy_from_slice(MAGIC);
    b[4..].copy_from_slice(&PROTO_VERSION.to_be_bytes());
    w.write_all(&b)?;
    w.flush()
}

fn read_exact_or_closed(r: &mut impl Read, buf: &mut [u8]) -> Result<(), ProtoError> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ProtoError::Closed
        } else {
            ProtoError::Io(e)
        }
    })
}

/// Read the peer's preamble; returns its protocol version.
pub fn read_preamble(r: &mut impl Read) -> Result<u16, ProtoError> {
    let mut b = [0u8; 6];
    read_exact_or_closed(r, &mut b)?;
    if &b[..4] != MAGIC {
        return Err(ProtoError::NotAgent(
            String::from_utf8_lossy(&b).escape_debug().to_string(),
        ));
    }
    Ok(u16::from_be_bytes([b[4], b[5]]))
}

/// Send one message of at most `max` bytes of JSON.
pub fn write_frame<T: Serialize>(w: &mut impl Write, m: &T, max: usize) -> Result<(), ProtoError> {
    let body = serde_json::to_vec(m)?;
    if body.len() > max {
        return Err(ProtoError::TooLarge {
            len: body.len(),
            max,
        });
    }
    let len = u32::try_from(body.len()).map_err(|_| ProtoError::TooLarge {
        len: body.len(),
        max,
    })?;
    let mut out = Vec::with_capacity(body.len().saturating_add(4));
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    w.write_all(&out)?;
    w.flush()?;
    Ok(())
}

/// Read one frame's body of at most `max` bytes. A length above `max` is
/// refused before any allocation, and the buffer grows only as bytes arrive
/// (a peer announcing a long frame and sending little costs little).
pub fn read_frame(r: &mut impl Read, max: usize) -> Result<Vec<u8>, ProtoError> {
    let mut lb = [0u8; 4];
    read_exact_or_closed(r, &mut lb)?;
    let len = usize::try_from(u32::from_be_bytes(lb)).unwrap_or(usize::MAX);
    if len > max {
        return Err(ProtoError::TooLarge { len, max });
    }
    let mut body = Vec::new();
    let got = r.take(len as u64).read_to_end(&mut body)?;
    if got < len {
        return Err(ProtoError::Closed);
    }
    Ok(body)
}

/// Read and decode one message of at most `max` bytes.
pub fn read_msg<T: serde::de::DeserializeOwned>(
    r: &mut impl Read,
    max: usize,
) -> Result<T, ProtoError> {
    let body = read_frame(r, max)?;
    Ok(serde_json::from_slice(&body)?)
}

/// An upper bound of the JSON values and object keys in `text`: one per
/// `[`, `{`, `,` or `:` outside strings, plus one. Linear, allocation-free.
pub fn json_values(text: &[u8]) -> usize {
    let (mut n, mut in_str, mut esc) = (1usize, false, false);
    for &b in text {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
        } else if b == b'"' {
            in_str = true;
        } else if matches!(b, b'[' | b'{' | b',' | b':') {
            n = n.saturating_add(1);
        }
    }
    n
}

/// Bytes of answers that every host of this controller together may hold
/// while they are read and decoded: [`ANSWER_COST`] times each frame's
/// length. A frame waits for room (up to [`BUDGET_WAIT`]) before a byte of
/// it is read.
pub const MAX_ANSWERS_IN_FLIGHT: usize = 256 << 20;

/// What reading and decoding an answer costs, per byte of its frame: the
/// frame, then the decoded value beside it (measured 2.5 times the frame
/// at the value cap, docs/security.md).
pub const ANSWER_COST: (usize, usize) = (5, 2);

/// The longest a frame waits for room in the budget.
pub const BUDGET_WAIT: Duration = Duration::from_secs(120);

/// A shared budget of bytes in flight, waited on by the readers of every
/// host's answers.
#[derive(Debug)]
pub struct Budget {
    total: usize,
    state: Mutex<(usize, usize)>,
    freed: Condvar,
}

/// Room taken from a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Held<'a> {
    budget: &'a Budget,
    n: usize,
}

impl Budget {
    /// A budget of `total` bytes.
    pub const fn new(total: usize) -> Budget {
        Budget {
            total,
            state: Mutex::new((0, 0)),
            freed: Condvar::new(),
        }
    }

    /// Take `n` bytes, waiting up to `wait` for others to give theirs back.
    pub fn take(&self, n: usize, wait: Duration) -> Result<Held<'_>, ProtoError> {
        let over = || ProtoError::OverBudget {
            need: n,
            total: self.total,
        };
        if n > self.total {
            return Err(over());
        }
        let end = Instant::now() + wait;
        let mut g = self.state.lock().map_err(|_| over())?;
        while g.0.saturating_add(n) > self.total {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(over());
            }
            g = self.freed.wait_timeout(g, left).map_err(|_| over())?.0;
        }
        g.0 += n;
        g.1 = g.1.max(g.0);
        Ok(Held { budget: self, n })
    }

    /// The most held at once since this budget was made.
    pub fn peak(&self) -> usize {
        self.state.lock().map(|g| g.1).unwrap_or(0)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Ok(mut g) = self.budget.state.lock() {
            g.0 = g.0.saturating_sub(self.n);
        }
        self.budget.freed.notify_all();
    }
}

/// The budget every agent session of this process reads its answers under.
pub static ANSWERS: Budget = Budget::new(MAX_ANSWERS_IN_FLIGHT);

/// Read one agent answer: a frame of at most [`MAX_RESPONSE`] bytes whose
/// JSON holds at most [`MAX_RESPONSE_VALUES`] values, checked before it is
/// decoded, read and decoded within [`ANSWERS`].
pub fn read_response(r: &mut impl Read) -> Result<Response, ProtoError> {
    read_response_within(r, &ANSWERS, BUDGET_WAIT)
}

/// [`read_response`] under `budget`, waiting at most `wait` for room.
pub fn read_response_within(
    r: &mut impl Read,
    budget: &Budget,
    wait: Duration,
) -> Result<Response, ProtoError> {
    let mut lb = [0u8; 4];
    read_exact_or_closed(r, &mut lb)?;
    let len = usize::try_from(u32::from_be_bytes(lb)).unwrap_or(usize::MAX);
    if len > MAX_RESPONSE {
        return Err(ProtoError::TooLarge {
            len,
            max: MAX_RESPONSE,
        });
    }
    let cost = len.saturating_mul(ANSWER_COST.0) / ANSWER_COST.1;
    let _held = budget.take(cost, wait)?;
    // Room is held for it: one allocation of its length, which the
    // allocator maps and unmaps whole, not a chain of doublings.
    let mut body = Vec::with_capacity(len);
    if r.take(len as u64).read_to_end(&mut body)? < len {
        return Err(ProtoError::Closed);
    }
    let values = json_values(&body);
    if values > MAX_RESPONSE_VALUES {
        return Err(ProtoError::TooComplex {
            values,
            max: MAX_RESPONSE_VALUES,
        });
    }
    Ok(serde_json::from_slice(&body)?)
}

#[cfg(test)]
mod tests;
