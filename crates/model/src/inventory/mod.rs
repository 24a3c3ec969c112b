//! Fleet inventories: which hosts `nettune fleet` reaches and how.
//!
//! Three formats are read, chosen by the file's extension ([`Format::from_path`]):
//! nettune's own TOML ([`toml`], `.toml`), an Ansible INI inventory
//! (`.ini`, `.cfg` or no extension) and an Ansible YAML inventory (`.yml`, `.yaml`).
//! Every format resolves to the same [`Inventory`]; `--limit` patterns select
//! from it ([`select`]). Parsing is pure; [`load`] is the one function that reads
//! a file (at most [`MAX_FILE_BYTES`]). The formats are described in `docs/fleet.md`.

use crate::error::ParseError;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read;
use std::path::Path;
use thiserror::Error;

mod ansible;
mod ansible_ini;
mod ansible_yaml;
mod hostpattern;
mod limit;
pub mod toml;
mod words;

pub use limit::{select, LimitError};
pub use words::split_words;

/// Largest inventory file [`load`] reads.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// Most hosts in one inventory (after range expansion).
pub const MAX_HOSTS: usize = 10_000;
/// Deepest group nesting (Ansible `children`) and YAML nesting.
pub const MAX_DEPTH: usize = 32;
/// Longest host or group name (a DNS name's limit).
pub const MAX_NAME_LEN: usize = 253;

/// A host's name in the inventory (what `--limit` and reports use).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostName(String);

impl HostName {
    /// A name of 1 to [`MAX_NAME_LEN`] characters without whitespace, control
    /// characters or the `--limit` operators `, : & ! [ ]` at its start.
    pub fn new(s: &str) -> Option<HostName> {
        valid_name(s).then(|| HostName(s.to_owned()))
    }
    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A role of a host: a TOML `roles` entry or an Ansible group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Role(String);

impl Role {
    /// A role name, with the same rules as [`HostName::new`].
    pub fn new(s: &str) -> Option<Role> {
        valid_name(s).then(|| Role(s.to_owned()))
    }
    /// The role as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME_LEN
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        && !s.starts_with(['&', '!', '~', '@'])
        && !s.contains([',', '[', ']', '=', '"', '\''])
}

/// How nettune reaches a host's agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// `ssh [-J jump] [-i identity_file] [-p port] [ssh_args] [user@]address`.
    Ssh {
        /// Host name or IP address to connect to.
        address: String,
        /// Remote user; `None` lets ssh choose.
        user: Option<String>,
        /// Remote port; `None` lets ssh choose.
        port: Option<u16>,
        /// Jump host (`ssh -J`).
        jump: Option<String>,
        /// Private key file (`ssh -i`).
        identity_file: Option<String>,
        /// Further ssh arguments, already split into words.
        ssh_args: Vec<String>,
    },
    /// `kubectl exec` into a pod.
    Kubectl {
        /// Pod name.
        pod: String,
        /// Namespace; `None` is kubectl's current one.
        namespace: Option<String>,
        /// Container; `None` is the fleet transport's default (`nettune`).
        container: Option<String>,
        /// kubeconfig context; `None` is the current one.
        context: Option<String>,
    },
    /// `ip netns exec NAME` on this machine.
    Netns {
        /// Network namespace name.
        name: String,
    },
    /// This machine, no transport.
    Local,
    /// A QEMU guest of this machine: its agent's virtio-serial port, which
    /// QEMU joins to a unix socket here (`nettune-guest`, docs/guests.md).
    Guest {
        /// The unix socket QEMU listens on for the guest's agent port.
        socket: String,
    },
}

/// One host of an inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Inventory name, unique within the inventory.
    pub name: HostName,
    /// How to reach it.
    pub transport: Transport,
    /// Roles (TOML `roles`, Ansible groups other than `all` and `ungrouped`).
    pub roles: BTreeSet<Role>,
    /// Free-form labels (TOML `labels`; Ansible variables not named `ansible_*`).
    pub labels: BTreeMap<String, String>,
}

/// The hosts of an inventory file, in the file's order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inventory {
    /// Hosts, each name once.
    pub hosts: Vec<Host>,
}

/// The format of an inventory file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// nettune's TOML (`.toml`).
    Toml,
    /// Ansible INI (`.ini`, `.cfg`, no extension).
    AnsibleIni,
    /// Ansible YAML (`.yml`, `.yaml`).
    AnsibleYaml,
}

impl Format {
    /// The format named by `path`'s extension; `None` for any other extension.
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension().and_then(|e| e.to_str()) {
            None => Some(Format::AnsibleIni),
            Some(e) => match e.to_ascii_lowercase().as_str() {
                "toml" => Some(Format::Toml),
                "ini" | "cfg" => Some(Format::AnsibleIni),
                "yml" | "yaml" => Some(Format::AnsibleYaml),
                _ => None,
            },
        }
    }
}

/// Parse inventory text of a known format. Errors carry the 1-based line.
pub fn parse(text: &str, format: Format) -> Result<Inventory, ParseError> {
    match format {
        Format::Toml => toml::parse(text),
        Format::AnsibleIni => ansible_ini::parse(text),
        Format::AnsibleYaml => ansible_yaml::parse(text),
    }
}

/// An inventory file that could not be read or parsed; every variant names the file.
#[derive(Debug, Error)]
pub enum InventoryError {
    /// The file could not be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// The inventory path.
        file: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The path is a FIFO, device node, socket or directory: not read.
    #[error("{file}: not a regular file (a FIFO, device, socket or directory); not read")]
    NotRegular {
        /// The inventory path.
        file: String,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("{file}: larger than {max} bytes, not read")]
    TooLarge {
        /// The inventory path.
        file: String,
        /// The cap.
        max: u64,
    },
    /// The extension names no known format.
    #[error("{file}: unknown inventory format (use .toml, .yml/.yaml, or .ini/.cfg/no extension for Ansible INI)")]
    UnknownFormat {
        /// The inventory path.
        file: String,
    },
    /// The text is not UTF-8.
    #[error("{file}: not UTF-8 text")]
    NotText {
        /// The inventory path.
        file: String,
    },
    /// The text could not be parsed (the error has the line).
    #[error("{file}: {source}")]
    Parse {
        /// The inventory path.
        file: String,
        /// What was wrong, and where.
        #[source]
        source: ParseError,
    },
}

/// Read and parse one inventory file, its format chosen by extension.
pub fn load(path: &Path) -> Result<Inventory, InventoryError> {
    let file = path.display().to_string();
    let format = Format::from_path(path)
        .ok_or_else(|| InventoryError::UnknownFormat { file: file.clone() })?;
    let io = |source| InventoryError::Io {
        file: file.clone(),
        source,
    };
    // A regular file only, checked before it is opened (a FIFO would block
    // the open, a device node would stream) and again on the open file.
    let regular = |m: std::fs::Metadata| {
        if m.is_file() {
            Ok(())
        } else {
            Err(InventoryError::NotRegular { file: file.clone() })
        }
    };
    regular(std::fs::metadata(path).map_err(io)?)?;
    let f = std::fs::File::open(path).map_err(io)?;
    regular(f.metadata().map_err(io)?)?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if u64::try_from(bytes.len()).map_or(true, |n| n > MAX_FILE_BYTES) {
        return Err(InventoryError::TooLarge {
            file,
            max: MAX_FILE_BYTES,
        });
    }
    let text =
        String::from_utf8(bytes).map_err(|_| InventoryError::NotText { file: file.clone() })?;
    parse(&text, format).map_err(|source| InventoryError::Parse { file, source })
}

/// At most 64 characters of `s`, for messages quoting input.
pub(crate) fn short(s: &str) -> String {
    s.chars().take(64).collect()
}

/// 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    let before = text.get(..end).unwrap_or(text);
    before
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        .saturating_add(1)
}
