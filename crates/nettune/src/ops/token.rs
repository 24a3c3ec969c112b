//! The token a server checks and a client sends: `--token-file`, the
//! systemd credential, or `NETTUNE_TOKEN`.

use anyhow::Context;
use engine::config::human_bytes;
use std::path::PathBuf;

/// Largest token file read.
const MAX_TOKEN_FILE: u64 = 64 * 1024;

/// The systemd credential `nettune serve` reads its token from when it has
/// no `--token-file`: `LoadCredential=nettune-token` in the unit makes it
/// `$CREDENTIALS_DIRECTORY/nettune-token`, readable by the unit's dynamic
/// user (a file under /etc is not).
pub const TOKEN_CREDENTIAL: &str = "nettune-token";

/// The environment variable holding a token.
pub const TOKEN_ENV: &str = "NETTUNE_TOKEN";

/// The server's token: `--token-file`, else the systemd credential
/// [`TOKEN_CREDENTIAL`] when `$CREDENTIALS_DIRECTORY` holds it, else
/// `NETTUNE_TOKEN` ([`load_token`]).
pub fn serve_token(file: Option<&PathBuf>) -> anyhow::Result<Option<Vec<u8>>> {
    if file.is_none() {
        if let Some(dir) = std::env::var_os("CREDENTIALS_DIRECTORY") {
            let cred = PathBuf::from(dir).join(TOKEN_CREDENTIAL);
            if cred.exists() {
                return load_token(Some(&cred));
            }
        }
    }
    load_token(file)
}

/// Read the token from `--token-file` or `NETTUNE_TOKEN` (surrounding
/// whitespace trimmed). A blank one (empty or whitespace only) is an error,
/// never "no token": it would look protected and run open.
pub fn load_token(file: Option<&PathBuf>) -> anyhow::Result<Option<Vec<u8>>> {
    if let Some(f) = file {
        // The one bounded reader: a FIFO or device is refused, never waited on.
        let text = match host::files::read_bounded(f, MAX_TOKEN_FILE) {
            Ok(t) => t,
            Err(host::HostError::TooLarge { .. }) => anyhow::bail!(
                "token file {} is larger than {} (a token is one line)",
                f.display(),
                human_bytes(MAX_TOKEN_FILE)
            ),
            Err(e) => return Err(e).context("reading token file"),
        };
        return match engine::auth::token_from_bytes(&text) {
            Some(t) => Ok(Some(t)),
            None => anyhow::bail!(
                "token file {} is blank (empty or whitespace only): put the token in it",
                f.display()
            ),
        };
    }
    match std::env::var_os(TOKEN_ENV) {
        None => Ok(None),
        Some(v) => {
            use std::os::unix::ffi::OsStrExt;
            match engine::auth::token_from_bytes(v.as_bytes()) {
                Some(t) => Ok(Some(t)),
                None => anyhow::bail!(
                    "NETTUNE_TOKEN is blank (empty or whitespace only): set a token or unset it"
                ),
            }
        }
    }
}
