//! `--bdp RATE,RTT|HOST`: a bandwidth and a round-trip time whose product
//! sizes socket buffers, and how the RTT was measured.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A bandwidth and a round-trip time whose product sizes socket buffers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bdp {
    /// Path rate in bits per second.
    pub rate_bps: u64,
    /// Round-trip time in microseconds.
    pub rtt_us: u64,
}

/// Slowest rate `--bdp` takes: 1 kbit/s.
pub const BDP_MIN_RATE_BPS: u64 = 1_000;
/// Fastest rate `--bdp` takes: 2 Tbit/s (above 1.6 Tbit/s Ethernet).
pub const BDP_MAX_RATE_BPS: u64 = 2_000_000_000_000;
/// Longest RTT `--bdp` (and a profile's `default_rtt_us`) takes: 10 s, far
/// above a geostationary satellite hop (about 600 ms).
pub const MAX_RTT_US: u64 = 10_000_000;

/// A `--bdp RATE,RTT` value that was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BdpError {
    /// Not `RATE,RTT`.
    #[error("`{0}`: expected RATE,RTT such as 10gbit,1ms")]
    Shape(String),
    /// The rate is not a number with a known unit.
    #[error("rate `{0}`: expected a number and a unit (kbit, mbit, gbit, tbit), such as 10gbit")]
    Rate(String),
    /// The RTT is not a number with a known unit.
    #[error("RTT `{0}`: expected a number and a unit (us, ms, s), such as 20ms")]
    Rtt(String),
    /// The rate is outside [`BDP_MIN_RATE_BPS`]..=[`BDP_MAX_RATE_BPS`].
    #[error("rate `{0}` is outside 1kbit..2tbit (1 kbit/s to 2 Tbit/s)")]
    RateRange(String),
    /// The RTT is outside 1 µs..=[`MAX_RTT_US`].
    #[error("RTT `{0}` is outside 1us..10s")]
    RttRange(String),
    /// A measured RTT's record (in a plan file) is malformed.
    #[error("rtt_measured: {0}")]
    Measured(&'static str),
}

/// How the RTT of `--bdp RATE,HOST` was measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RttMeasured {
    /// The host as given.
    pub host: String,
    /// The address probed.
    pub address: String,
    /// `nettune` (request/response against `nettune serve`) or `icmp` (echo).
    pub method: String,
    /// Probes (ICMP echoes or transactions) answered.
    pub samples: u64,
    /// Median round-trip time, µs (what `bdp.rtt_us` holds).
    pub median_us: u64,
}

/// Longest host name `--bdp RATE,HOST` takes (DNS's limit).
pub const MAX_HOST_LEN: usize = 253;

impl RttMeasured {
    /// Check a record read from a plan file.
    pub fn validate(&self) -> Result<(), BdpError> {
        if self.host.is_empty() || self.host.len() > MAX_HOST_LEN || !is_host(&self.host) {
            return Err(BdpError::Measured("host is not a host name or address"));
        }
        if self.address.len() > 64 || self.address.parse::<std::net::IpAddr>().is_err() {
            return Err(BdpError::Measured("address is not an IP address"));
        }
        if !matches!(self.method.as_str(), "nettune" | "icmp") {
            return Err(BdpError::Measured("method is neither nettune nor icmp"));
        }
        if !(1..=MAX_RTT_US).contains(&self.median_us) {
            return Err(BdpError::Measured("median_us is outside 1us..10s"));
        }
        Ok(())
    }
}

/// What `--bdp` asks for: an RTT given, or a host to measure it to.
#[derive(Debug, Clone, PartialEq)]
pub enum BdpSpec {
    /// `RATE,RTT`.
    Given(Bdp),
    /// `RATE,HOST`: measure the RTT to HOST.
    Measure {
        /// Path rate in bits per second (range-checked).
        rate_bps: u64,
        /// Host name or address (`[v6]` allowed).
        host: String,
    },
}

/// Whether `s` can be a host name or IP address (not a mistyped duration:
/// a name starts with a letter; `10.0.0.2`, `::1` and `[::1]` are addresses).
fn is_host(s: &str) -> bool {
    let bare = s.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    s.len() <= MAX_HOST_LEN
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
}

impl BdpSpec {
    /// Parse `RATE,RTT` ([`Bdp::parse`]) or `RATE,HOST`, where HOST is a name
    /// starting with a letter or an IP address; anything else is an RTT error.
    pub fn parse(s: &str) -> Result<BdpSpec, BdpError> {
        let (rate, second) = s.split_once(',').ok_or_else(|| BdpError::Shape(clip(s)))?;
        let second = second.trim();
        if parse_rtt(second).is_ok() || !is_host(second) {
            return Bdp::parse(s).map(BdpSpec::Given);
        }
        let rate = rate.trim();
        let rate_bps = parse_rate(rate)?;
        if !(BDP_MIN_RATE_BPS as f64..=BDP_MAX_RATE_BPS as f64).contains(&rate_bps) {
            return Err(BdpError::RateRange(clip(rate)));
        }
        Ok(BdpSpec::Measure {
            rate_bps: rate_bps as u64,
            host: second.to_string(),
        })
    }
}

fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

impl Bdp {
    /// The product in bytes, computed without overflow (saturating at `u64::MAX`).
    pub fn bytes(&self) -> u64 {
        u128::from(self.rate_bps)
            .checked_mul(u128::from(self.rtt_us))
            .map(|bits_us| bits_us / 8_000_000)
            .and_then(|b| u64::try_from(b).ok())
            .unwrap_or(u64::MAX)
    }

    /// Parse `RATE,RTT`, e.g. `10gbit,1ms`, `100mbit,100ms`, `1.5G,250us`.
    /// RATE takes k/m/g/t prefixes (bits per second, with or without `bit`/`bps`);
    /// RTT takes `us`, `ms` or `s` (default ms). The rate must be within
    /// 1 kbit/s..2 Tbit/s and the RTT within 1 µs..10 s.
    pub fn parse(s: &str) -> Result<Bdp, BdpError> {
        let (rate, rtt) = s.split_once(',').ok_or_else(|| BdpError::Shape(clip(s)))?;
        let (rate, rtt) = (rate.trim(), rtt.trim());
        let rate_bps = parse_rate(rate)?;
        let rtt_us = parse_rtt(rtt)?;
        if !(BDP_MIN_RATE_BPS as f64..=BDP_MAX_RATE_BPS as f64).contains(&rate_bps) {
            return Err(BdpError::RateRange(clip(rate)));
        }
        if !(1.0..=MAX_RTT_US as f64).contains(&rtt_us) {
            return Err(BdpError::RttRange(clip(rtt)));
        }
        // Both are finite and in range here, so the casts are exact enough and cannot wrap.
        Ok(Bdp {
            rate_bps: rate_bps as u64,
            rtt_us: rtt_us as u64,
        })
    }

    /// Check values that did not come through [`Bdp::parse`] (a plan file's options).
    pub fn validate(&self) -> Result<(), BdpError> {
        if !(BDP_MIN_RATE_BPS..=BDP_MAX_RATE_BPS).contains(&self.rate_bps) {
            return Err(BdpError::RateRange(format!("{} bit/s", self.rate_bps)));
        }
        if !(1..=MAX_RTT_US).contains(&self.rtt_us) {
            return Err(BdpError::RttRange(format!("{} us", self.rtt_us)));
        }
        Ok(())
    }
}

fn split_num(s: &str) -> (&str, &str) {
    let i = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..i], &s[i..])
}

/// Bits per second as given (not yet range-checked; may be huge, never NaN).
fn parse_rate(s: &str) -> Result<f64, BdpError> {
    crate::units::parse_rate(s)
        .map(f64::floor)
        .map_err(|_| BdpError::Rate(clip(s)))
}

/// Microseconds as given (not yet range-checked; may be huge, never NaN).
fn parse_rtt(s: &str) -> Result<f64, BdpError> {
    let (num, unit) = split_num(s);
    let v: f64 = num.parse().map_err(|_| BdpError::Rtt(clip(s)))?;
    let mul = match unit.to_ascii_lowercase().as_str() {
        "us" | "µs" => 1.0,
        "" | "ms" => 1e3,
        "s" => 1e6,
        _ => return Err(BdpError::Rtt(clip(s))),
    };
    Ok((v * mul).floor())
}
