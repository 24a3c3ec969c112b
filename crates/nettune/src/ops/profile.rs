//! Profiles by name or path: the built-ins, else a TOML file read through
//! host's bounded reader and parsed by `tune`.

use tune::profile::{self, Profile};

/// Load `--profile NAME_OR_PATH`: a built-in by name, else a TOML file read
/// here through host's bounded reader (a regular file of at most
/// [`profile::MAX_PROFILE_BYTES`]; a FIFO or device is refused without
/// blocking) and parsed by `tune`, which does no I/O. A name that is neither
/// a built-in nor an existing file (and does not end in `.toml`) is an
/// unknown profile.
pub fn load(name_or_path: &str) -> Result<Profile, tune::ProfileError> {
    use host::error::HostError;
    if profile::is_builtin(name_or_path) {
        return profile::builtin(name_or_path);
    }
    let path = std::path::Path::new(name_or_path);
    match host::files::read_bounded_text(path, profile::MAX_PROFILE_BYTES) {
        Ok(text) => profile::parse_user(&text, name_or_path),
        Err(e) if e.is_not_found() && path.extension().is_none_or(|x| x != "toml") => {
            Err(tune::ProfileError::Unknown(name_or_path.into()))
        }
        Err(e) => {
            // The file is named once, by the profile error.
            let message = match e {
                HostError::NotRegular { kind, .. } => format!("not a regular file ({kind})"),
                HostError::TooLarge { limit, .. } => format!("larger than {limit} bytes"),
                HostError::Io { error, .. } => error.to_string(),
                other => other.to_string(),
            };
            Err(tune::ProfileError::Read {
                file: name_or_path.into(),
                message,
            })
        }
    }
}
