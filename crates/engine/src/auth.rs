//! Challenge-response on a pre-shared token (HMAC-SHA256). The token itself
//! never crosses the wire: each side proves it knows it by a MAC over both
//! sides' random nonces, under a label that differs per direction.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const CLIENT_LABEL: &[u8] = b"nettune-v1 client proof";
const SERVER_LABEL: &[u8] = b"nettune-v1 server proof";

/// A fresh random nonce, as hex (32 bytes of entropy).
pub fn nonce() -> String {
    hex(&random_bytes::<32>())
}

pub use sys::random::{random_bytes, random_u64};

fn mac(token: &[u8], label: &[u8], server_nonce: &str, client_nonce: &str) -> HmacSha256 {
    // HMAC accepts keys of any length, so new_from_slice cannot fail.
    let mut m = match HmacSha256::new_from_slice(token) {
        Ok(m) => m,
        Err(_) => unreachable_key(),
    };
    m.update(label);
    m.update(&(server_nonce.len() as u32).to_be_bytes());
    m.update(server_nonce.as_bytes());
    m.update(&(client_nonce.len() as u32).to_be_bytes());
    m.update(client_nonce.as_bytes());
    m
}

#[cold]
fn unreachable_key() -> ! {
    panic!("HMAC-SHA256 accepts keys of any length")
}

/// The client's proof: HMAC(token, client label ‖ server nonce ‖ client nonce), hex.
pub fn client_proof(token: &[u8], server_nonce: &str, client_nonce: &str) -> String {
    hex(&mac(token, CLIENT_LABEL, server_nonce, client_nonce)
        .finalize()
        .into_bytes())
}

/// The server's proof, same inputs under the server label, hex.
pub fn server_proof(token: &[u8], server_nonce: &str, client_nonce: &str) -> String {
    hex(&mac(token, SERVER_LABEL, server_nonce, client_nonce)
        .finalize()
        .into_bytes())
}

/// Constant-time check of a client's proof.
pub fn verify_client(token: &[u8], server_nonce: &str, client_nonce: &str, proof: &str) -> bool {
    verify(CLIENT_LABEL, token, server_nonce, client_nonce, proof)
}

/// Constant-time check of a server's proof.
pub fn verify_server(token: &[u8], server_nonce: &str, client_nonce: &str, proof: &str) -> bool {
    verify(SERVER_LABEL, token, server_nonce, client_nonce, proof)
}

fn verify(label: &[u8], token: &[u8], sn: &str, cn: &str, proof: &str) -> bool {
    let Some(bytes) = unhex(proof) else {
        return false;
    };
    mac(token, label, sn, cn).verify_slice(&bytes).is_ok()
}

/// Lower-case hex.
pub fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 256 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Read a token file: its content with surrounding whitespace trimmed; an
/// empty token is refused.
pub fn token_from_text(text: &str) -> Option<Vec<u8>> {
    token_from_bytes(text.as_bytes())
}

/// A token from raw bytes (a file, an environment variable): surrounding
/// ASCII whitespace trimmed; `None` when nothing is left (a blank token,
/// which callers must treat as an error, never as "no token").
pub fn token_from_bytes(b: &[u8]) -> Option<Vec<u8>> {
    let t = b.trim_ascii();
    if t.is_empty() {
        None
    } else {
        Some(t.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_verify_and_differ() {
        let (sn, cn) = (nonce(), nonce());
        let p = client_proof(b"secret", &sn, &cn);
        assert!(verify_client(b"secret", &sn, &cn, &p));
        assert!(!verify_client(b"wrong", &sn, &cn, &p));
        assert!(!verify_server(b"secret", &sn, &cn, &p));
        assert!(!verify_client(b"secret", &cn, &sn, &p));
        assert!(!verify_client(b"secret", &sn, &cn, "zz"));
        let s = server_proof(b"secret", &sn, &cn);
        assert!(verify_server(b"secret", &sn, &cn, &s));
        assert!(!p.contains("secret"));
    }

    #[test]
    fn token_trimmed() {
        assert_eq!(token_from_text(" abc \n"), Some(b"abc".to_vec()));
        assert_eq!(token_from_text("\n"), None);
        assert_eq!(token_from_bytes(b" \t\r\n"), None);
        assert_eq!(token_from_bytes(b""), None);
        assert_eq!(token_from_bytes(b"\xff x "), Some(b"\xff x".to_vec()));
    }
}
