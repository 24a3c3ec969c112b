//! The driver's counters read in-process with the `SIOCETHTOOL` ioctl
//! (`ETHTOOL_GSSET_INFO` for the count, `ETHTOOL_GSTRINGS` for the names,
//! `ETHTOOL_GSTATS` for the values), the calls `ethtool -S` makes, without a
//! fork per interface and sample. The `unsafe` part is the `nettune-sys`
//! crate; this module checks what the kernel answered.
//!
//! [`IoctlStats`] keeps each interface's names and buffers: a sample is one
//! `ETHTOOL_GSTATS`; the names are read again only when the count the kernel
//! returns changes (channels added or removed).
//!
//! Runs in the current network namespace, as ethtool(8) does.

use crate::iface::check_iface;
use model::parse::ethtool_stats::{NicStats, MAX_COUNTERS};
use model::snapshot::Probe;
use std::collections::BTreeMap;
use std::io;
use sys::ethtool::{
    errno, EthtoolSocket, Guarded, ETH_GSTRING_LEN, ETH_SS_STATS, GSTATS_HEADER, GSTRINGS_HEADER,
};

/// Why a buffer the kernel filled was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StatsBufError {
    /// The count is above [`MAX_COUNTERS`].
    #[error("{count} counters, more than the {MAX_COUNTERS} allowed")]
    TooMany {
        /// Count the kernel reported.
        count: u32,
    },
    /// The buffer holds fewer bytes than the count needs.
    #[error("{count} counters do not fit in the {bytes} bytes returned")]
    Short {
        /// Count the kernel reported.
        count: u32,
        /// Bytes available.
        bytes: usize,
    },
    /// The values' count differs from the names' count.
    #[error("{values} values for {names} names (the driver's set changed)")]
    Mismatch {
        /// Names held.
        names: usize,
        /// Values returned.
        values: u32,
    },
}

/// The names in an `ETHTOOL_GSTRINGS` answer: `count` slots of
/// [`ETH_GSTRING_LEN`] bytes in `data`, each up to its first NUL (a name
/// filling its slot has none), invalid UTF-8 replaced, spaces trimmed as
/// ethtool(8)'s text is by the parser.
pub fn gstrings_names(count: u32, data: &[u8]) -> Result<Vec<String>, StatsBufError> {
    let n = usize::try_from(count).map_err(|_| StatsBufError::TooMany { count })?;
    if n > MAX_COUNTERS {
        return Err(StatsBufError::TooMany { count });
    }
    let need = n
        .checked_mul(ETH_GSTRING_LEN)
        .ok_or(StatsBufError::TooMany { count })?;
    let Some(data) = data.get(..need) else {
        return Err(StatsBufError::Short {
            count,
            bytes: data.len(),
        });
    };
    Ok(data
        .chunks_exact(ETH_GSTRING_LEN)
        .map(|slot| {
            let end = slot.iter().position(|&b| b == 0).unwrap_or(slot.len());
            String::from_utf8_lossy(&slot[..end]).trim().to_string()
        })
        .collect())
}

/// The counters of an `ETHTOOL_GSTATS` answer (`count` native-endian `u64`s
/// in `data`) by `names`: the counts must agree; an empty name is skipped
/// and a repeated one keeps its first value (as the text parser does).
pub fn stats_map(
    names: &[String],
    count: u32,
    data: &[u8],
) -> Result<BTreeMap<String, u64>, StatsBufError> {
    let n = usize::try_from(count).map_err(|_| StatsBufError::TooMany { count })?;
    if n != names.len() {
        return Err(StatsBufError::Mismatch {
            names: names.len(),
            values: count,
        });
    }
    let need = n.checked_mul(8).ok_or(StatsBufError::TooMany { count })?;
    let Some(data) = data.get(..need) else {
        return Err(StatsBufError::Short {
            count,
            bytes: data.len(),
        });
    };
    let mut out = BTreeMap::new();
    for (name, v) in names.iter().zip(data.chunks_exact(8)) {
        if name.is_empty() {
            continue;
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(v);
        out.entry(name.clone()).or_insert(u64::from_ne_bytes(w));
    }
    Ok(out)
}

/// The ioctl is not allowed here (seccomp, an LSM, no socket family): the
/// caller may run ethtool(8) instead.
#[derive(Debug)]
pub struct Refused(pub io::Error);

/// One interface's names and its reused buffer for values.
#[derive(Debug)]
struct Cached {
    names: Vec<String>,
    values: Guarded,
}

/// Reads driver counters through the ioctl, keeping names per interface.
#[derive(Debug, Default)]
pub struct IoctlStats {
    sock: Option<EthtoolSocket>,
    cache: BTreeMap<String, Cached>,
}

/// Errors that mean "not allowed", not "this interface failed".
fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(errno::EPERM | errno::EACCES | errno::ENOTTY | errno::ENOSYS | errno::EAFNOSUPPORT)
    )
}

impl IoctlStats {
    /// A reader; the socket is opened on first use.
    pub fn new() -> IoctlStats {
        IoctlStats::default()
    }

    /// Keep the names of `ifaces` only (bounds the cache when interfaces
    /// come and go).
    pub fn retain(&mut self, ifaces: &[String]) {
        self.cache.retain(|k, _| ifaces.contains(k));
    }

    /// Forget `iface`'s names (it went away).
    fn forget(&mut self, iface: &str) {
        self.cache.remove(iface);
    }

    /// The driver counters of `iface` (the `ETH_SS_STATS` set, what
    /// `ethtool -S IF` prints; no standard groups). `Err` only when the
    /// ioctl itself is refused.
    pub fn read(&mut self, iface: &str) -> Result<Probe<NicStats>, Refused> {
        if let Err(e) = check_iface(iface) {
            return Ok(Probe::Error {
                message: e.to_string(),
            });
        }
        if self.sock.is_none() {
            self.sock = Some(EthtoolSocket::open().map_err(Refused)?);
        }
        // Fast path: one GSTATS into the cached buffer.
        if let (Some(sock), Some(c)) = (&self.sock, self.cache.get_mut(iface)) {
            let expect = u32::try_from(c.names.len()).unwrap_or(u32::MAX);
            match sock.gstats(iface, expect, &mut c.values) {
                Ok(n) => {
                    if let Ok(driver) = stats_map(&c.names, n, &c.values.bytes()[GSTATS_HEADER..]) {
                        return Ok(ok(driver));
                    }
                    // The count changed: read the names again below.
                }
                Err(e) if e.raw_os_error() == Some(errno::EFAULT) => {}
                Err(e) => {
                    self.forget(iface);
                    return self.failed(iface, "ETHTOOL_GSTATS", e);
                }
            }
            self.forget(iface);
        }
        let Some(sock) = &self.sock else {
            return Ok(Probe::Absent);
        };
        let count = match sock.sset_len(iface, ETH_SS_STATS) {
            Ok(Some(n)) if n > 0 => n,
            Ok(_) => return Ok(no_stats(iface)),
            Err(e) => return self.failed(iface, "ETHTOOL_GSSET_INFO", e),
        };
        let n = match usize::try_from(count) {
            Ok(n) if n <= MAX_COUNTERS => n,
            _ => return Ok(error(iface, StatsBufError::TooMany { count })),
        };
        // n <= 65536, so neither product overflows.
        let mut strings = match Guarded::new(GSTRINGS_HEADER + n * ETH_GSTRING_LEN) {
            Ok(g) => g,
            Err(e) => return self.failed(iface, "buffer", e),
        };
        let got = match sock.gstrings(iface, ETH_SS_STATS, count, &mut strings) {
            Ok(got) => got,
            Err(e) => return self.failed(iface, "ETHTOOL_GSTRINGS", e),
        };
        if got != count {
            // The set changed between the two calls: the next sample retries.
            return Ok(error(
                iface,
                StatsBufError::Mismatch {
                    names: n,
                    values: got,
                },
            ));
        }
        let names = match gstrings_names(got, &strings.bytes()[GSTRINGS_HEADER..]) {
            Ok(v) => v,
            Err(e) => return Ok(error(iface, e)),
        };
        let mut values = match Guarded::new(GSTATS_HEADER + names.len() * 8) {
            Ok(g) => g,
            Err(e) => return self.failed(iface, "buffer", e),
        };
        let expect = u32::try_from(names.len()).unwrap_or(u32::MAX);
        let got = match sock.gstats(iface, expect, &mut values) {
            Ok(got) => got,
            Err(e) => return self.failed(iface, "ETHTOOL_GSTATS", e),
        };
        match stats_map(&names, got, &values.bytes()[GSTATS_HEADER..]) {
            Ok(driver) => {
                self.cache
                    .insert(iface.to_string(), Cached { names, values });
                Ok(ok(driver))
            }
            Err(e) => Ok(error(iface, e)),
        }
    }

    fn failed(
        &mut self,
        iface: &str,
        what: &str,
        e: io::Error,
    ) -> Result<Probe<NicStats>, Refused> {
        self.forget(iface);
        if refused(&e) {
            return Err(Refused(e));
        }
        Ok(match e.raw_os_error() {
            Some(errno::EOPNOTSUPP) => no_stats(iface),
            Some(errno::ENODEV) => Probe::Error {
                message: format!("{iface}: no such interface ({what})"),
            },
            _ => Probe::Error {
                message: format!("{iface}: {what}: {e}"),
            },
        })
    }
}

fn ok(driver: BTreeMap<String, u64>) -> Probe<NicStats> {
    Probe::Ok {
        value: NicStats {
            driver,
            standard: BTreeMap::new(),
        },
    }
}

fn no_stats(iface: &str) -> Probe<NicStats> {
    Probe::Unsupported {
        reason: format!("{iface}: the driver reports no statistics (EOPNOTSUPP)"),
    }
}

fn error(iface: &str, e: StatsBufError) -> Probe<NicStats> {
    Probe::Error {
        message: format!("{iface}: ETHTOOL_GSTATS: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(name: &[u8]) -> [u8; ETH_GSTRING_LEN] {
        let mut s = [0u8; ETH_GSTRING_LEN];
        s[..name.len()].copy_from_slice(name);
        s
    }

    #[test]
    fn names_from_crafted_buffers() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&slot(b"rx_queue_0_packets"));
        // A name filling its slot: no NUL at all.
        buf.extend_from_slice(&[b'a'; ETH_GSTRING_LEN]);
        // Garbage after the NUL is ignored; leading spaces trimmed.
        let mut s = slot(b"  peer_ifindex\0junk");
        s[31] = b'z';
        buf.extend_from_slice(&s);
        // Invalid UTF-8 is replaced, not a failure.
        buf.extend_from_slice(&slot(b"bad\xff"));
        let names = gstrings_names(4, &buf).unwrap();
        assert_eq!(
            names,
            [
                "rx_queue_0_packets".to_string(),
                "a".repeat(32),
                "peer_ifindex".into(),
                "bad\u{fffd}".into()
            ]
        );
        // Fewer names than the buffer holds: only those.
        assert_eq!(gstrings_names(1, &buf).unwrap().len(), 1);
        assert_eq!(gstrings_names(0, &buf).unwrap(), Vec::<String>::new());
        // Hostile counts: more than the buffer, more than the cap, u32::MAX.
        assert_eq!(
            gstrings_names(5, &buf),
            Err(StatsBufError::Short {
                count: 5,
                bytes: 128
            })
        );
        assert_eq!(
            gstrings_names(65_537, &buf),
            Err(StatsBufError::TooMany { count: 65_537 })
        );
        assert_eq!(
            gstrings_names(u32::MAX, &buf),
            Err(StatsBufError::TooMany { count: u32::MAX })
        );
        // A partial last slot is short, not read past.
        assert!(matches!(
            gstrings_names(4, &buf[..127]),
            Err(StatsBufError::Short { .. })
        ));
    }

    #[test]
    fn values_from_crafted_buffers() {
        let names: Vec<String> = ["tx", "", "rx", "tx"].map(String::from).to_vec();
        let mut data = Vec::new();
        for v in [7u64, 8, u64::MAX, 9] {
            data.extend_from_slice(&v.to_ne_bytes());
        }
        let m = stats_map(&names, 4, &data).unwrap();
        // Empty name skipped, repeated name keeps the first value.
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [("rx".to_string(), u64::MAX), ("tx".to_string(), 7)]
        );
        assert_eq!(
            stats_map(&names, 3, &data),
            Err(StatsBufError::Mismatch {
                names: 4,
                values: 3
            })
        );
        assert_eq!(
            stats_map(&names, u32::MAX, &data),
            Err(StatsBufError::Mismatch {
                names: 4,
                values: u32::MAX
            })
        );
        assert_eq!(
            stats_map(&names, 4, &data[..31]),
            Err(StatsBufError::Short {
                count: 4,
                bytes: 31
            })
        );
    }

    #[test]
    fn lo_has_no_stats_and_bad_names_are_errors() {
        let mut s = IoctlStats::new();
        let Ok(p) = s.read("lo") else {
            eprintln!("skipped: SIOCETHTOOL refused here");
            return;
        };
        assert!(matches!(p, Probe::Unsupported { .. }), "{p:?}");
        assert!(matches!(s.read("-h"), Ok(Probe::Error { .. })));
        assert!(
            matches!(s.read("nt-no-such0"), Ok(Probe::Error { ref message }) if message.contains("no such interface")),
        );
    }
}
