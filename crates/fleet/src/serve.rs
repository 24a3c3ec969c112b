//! The agent's side of a session: preamble, then one [`Response`] per
//! [`Request`] until end of input or [`Request::Shutdown`]. What a request
//! does is the caller's handler (the CLI's commands); this loop owns the
//! wire: limits, malformed frames and version checks.

pub mod drops;

use crate::proto::{
    self, ErrorKind, ProtoError, Request, Response, MAX_REQUEST, MAX_RESPONSE, PROTO_VERSION,
};
use std::io::{Read, Write};
use thiserror::Error;

/// Why a session ended other than by end of input or `Shutdown` (each was
/// told to the controller first when the pipe still allowed it).
#[derive(Debug, Error)]
pub enum ServeError {
    /// The controller speaks another protocol version.
    #[error("the controller speaks agent protocol v{theirs}, this agent v{ours}")]
    Version {
        /// Ours.
        ours: u16,
        /// The controller's.
        theirs: u16,
    },
    /// The frame stream broke (oversized frame, not a nettune controller,
    /// a pipe error): there is no next frame to find.
    #[error(transparent)]
    Proto(#[from] ProtoError),
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The controller closed its end.
    Eof,
    /// [`Request::Shutdown`].
    Shutdown,
}

/// Serve requests from `r`, answering on `w`, with `handle` doing each
/// request other than `Hello` and `Shutdown`. A frame that is not a request
/// gets a `bad_request` error and the session goes on; a frame above
/// [`MAX_REQUEST`] gets `too_large` and ends it.
pub fn serve(
    r: &mut impl Read,
    w: &mut impl Write,
    nettune_version: &str,
    caps: &[&str],
    mut handle: impl FnMut(Request) -> Response,
) -> Result<End, ServeError> {
    proto::write_preamble(w).map_err(ProtoError::Io)?;
    let theirs = match proto::read_preamble(r) {
        Ok(v) => v,
        Err(ProtoError::Closed) => return Ok(End::Eof),
        Err(e) => return Err(e.into()),
    };
    if theirs != PROTO_VERSION {
        let e = ServeError::Version {
            ours: PROTO_VERSION,
            theirs,
        };
        let _ = send(w, &error(ErrorKind::Version, e.to_string()));
        return Err(e);
    }
    loop {
        let body = match proto::read_frame(r, MAX_REQUEST) {
            Ok(b) => b,
            Err(ProtoError::Closed) => return Ok(End::Eof),
            Err(e @ ProtoError::TooLarge { .. }) => {
                let _ = send(w, &error(ErrorKind::TooLarge, format!("request: {e}")));
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        let req: Request = match serde_json::from_slice(&body) {
            Ok(q) => q,
            Err(e) => {
                send(w, &error(ErrorKind::BadRequest, format!("request: {e}")))?;
                continue;
            }
        };
        let resp = match req {
            Request::Shutdown => return Ok(End::Shutdown),
            Request::Hello => Response::Hello {
                version: PROTO_VERSION,
                nettune_version: nettune_version.to_string(),
                caps: caps.iter().map(|c| c.to_string()).collect(),
            },
            q => handle(q),
        };
        send(w, &resp)?;
    }
}

fn error(kind: ErrorKind, message: String) -> Response {
    Response::Error { kind, message }
}

/// Send `resp`, or a `too_large` error in its place when it is above
/// [`MAX_RESPONSE`].
fn send(w: &mut impl Write, resp: &Response) -> Result<(), ProtoError> {
    match proto::write_frame(w, resp, MAX_RESPONSE) {
        Err(ProtoError::TooLarge { len, max }) => proto::write_frame(
            w,
            &error(
                ErrorKind::TooLarge,
                format!("the answer is {len} bytes, above the {max}-byte limit"),
            ),
            MAX_RESPONSE,
        ),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(input: &[u8]) -> (Result<End, ServeError>, Vec<Response>) {
        let mut out = Vec::new();
        let end = serve(&mut &input[..], &mut out, "9.9.9", &["inspect"], |q| {
            Response::Json {
                value: serde_json::json!({ "asked": q.name() }),
                code: 0,
            }
        });
        let mut r = out.as_slice();
        assert_eq!(proto::read_preamble(&mut r).unwrap(), PROTO_VERSION);
        let mut got = Vec::new();
        while let Ok(m) = proto::read_msg(&mut r, MAX_RESPONSE) {
            got.push(m);
        }
        (end, got)
    }

    fn frames(reqs: &[Request]) -> Vec<u8> {
        let mut b = Vec::new();
        proto::write_preamble(&mut b).unwrap();
        for q in reqs {
            proto::write_frame(&mut b, q, MAX_REQUEST).unwrap();
        }
        b
    }

    #[test]
    fn hello_then_requests_then_shutdown() {
        let input = frames(&[
            Request::Hello,
            Request::Verify {
                root: None,
                state_dir: None,
            },
            Request::Shutdown,
            Request::Hello,
        ]);
        let (end, got) = session(&input);
        assert_eq!(end.unwrap(), End::Shutdown);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            got[0],
            Response::Hello {
                version: PROTO_VERSION,
                nettune_version: "9.9.9".into(),
                caps: vec!["inspect".into()]
            }
        );
        assert!(matches!(&got[1], Response::Json { value, .. } if value["asked"] == "verify"));
    }

    #[test]
    fn a_malformed_frame_is_answered_and_the_session_goes_on() {
        let mut input = frames(&[]);
        proto::write_frame(
            &mut input,
            &serde_json::json!({"type": "nope"}),
            MAX_REQUEST,
        )
        .unwrap();
        input.extend_from_slice(&3u32.to_be_bytes());
        input.extend_from_slice(b"{{{");
        proto::write_frame(&mut input, &Request::Hello, MAX_REQUEST).unwrap();
        let (end, got) = session(&input);
        assert_eq!(end.unwrap(), End::Eof);
        assert_eq!(got.len(), 3);
        for g in &got[..2] {
            assert!(matches!(
                g,
                Response::Error {
                    kind: ErrorKind::BadRequest,
                    ..
                }
            ));
        }
        assert!(matches!(got[2], Response::Hello { .. }));
    }

    #[test]
    fn an_oversized_frame_is_answered_and_ends_the_session() {
        let mut input = frames(&[]);
        input.extend_from_slice(&((MAX_REQUEST + 1) as u32).to_be_bytes());
        input.extend_from_slice(&[b'x'; 64]);
        let (end, got) = session(&input);
        assert!(matches!(
            end,
            Err(ServeError::Proto(ProtoError::TooLarge { .. }))
        ));
        assert!(matches!(
            &got[..],
            [Response::Error {
                kind: ErrorKind::TooLarge,
                ..
            }]
        ));
    }

    #[test]
    fn another_version_is_told_both_numbers() {
        let mut input = b"NTAG".to_vec();
        input.extend_from_slice(&(PROTO_VERSION + 1).to_be_bytes());
        let (end, got) = session(&input);
        let e = end.unwrap_err().to_string();
        assert!(
            e.contains(&format!("v{}", PROTO_VERSION + 1))
                && e.contains(&format!("v{PROTO_VERSION}")),
            "{e}"
        );
        assert!(matches!(
            &got[..],
            [Response::Error {
                kind: ErrorKind::Version,
                ..
            }]
        ));
    }

    #[test]
    fn no_input_is_a_quiet_end() {
        let mut out = Vec::new();
        let end = serve(&mut &b""[..], &mut out, "1", &[], |_| unreachable!());
        assert_eq!(end.unwrap(), End::Eof);
    }
}
