//! The experiment file's TOML schema, as `serde` reads it: spans kept so
//! every error can name its line.

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) name: Option<Spanned<String>>,
    pub(super) description: Option<String>,
    pub(super) seed: Option<u64>,
    pub(super) repeats: Option<Spanned<i64>>,
    pub(super) warmup: Option<Spanned<i64>>,
    pub(super) until_ci: Option<Spanned<f64>>,
    pub(super) max_repeats: Option<Spanned<i64>>,
    pub(super) hosts: RawHosts,
    #[serde(default)]
    pub(super) workload: Vec<RawWorkload>,
    #[serde(default)]
    pub(super) factor: Vec<RawFactor>,
    pub(super) responses: RawResponses,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHosts {
    pub(super) lab: Option<RawLab>,
    pub(super) agents: Option<Vec<Spanned<String>>>,
    pub(super) fleet: Option<RawFleet>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFleet {
    pub(super) inventory: Spanned<String>,
    pub(super) server: Spanned<String>,
    pub(super) clients: Spanned<String>,
    pub(super) probe: Option<Spanned<String>>,
    pub(super) limit: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLab {
    pub(super) hosts: Option<Spanned<i64>>,
    pub(super) queues: Option<Spanned<i64>>,
    pub(super) rate_mbit: Option<Spanned<f64>>,
    pub(super) delay_ms: Option<Spanned<f64>>,
    pub(super) jitter_ms: Option<Spanned<f64>>,
    pub(super) loss_pct: Option<Spanned<f64>>,
    /// "veth" (default) or "loopback".
    pub(super) path: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) name: Spanned<String>,
    pub(super) test: Spanned<String>,
    pub(super) size: Option<Spanned<i64>>,
    pub(super) flows: Option<Spanned<i64>>,
    pub(super) duration_s: Option<Spanned<f64>>,
    pub(super) nodelay: Option<bool>,
    pub(super) sndbuf: Option<Spanned<i64>>,
    pub(super) rcvbuf: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFactor {
    pub(super) name: Spanned<String>,
    pub(super) levels: Spanned<Vec<Spanned<toml::Value>>>,
    /// Which hosts take the levels (roles or host names); all when absent.
    pub(super) hosts: Option<Spanned<Vec<Spanned<String>>>>,
    /// `module_param`: the kernel module.
    pub(super) module: Option<Spanned<String>>,
    /// `module_param`: the parameter.
    pub(super) param: Option<Spanned<String>>,
    /// `module_param`: reload the module so a level takes effect.
    pub(super) reload: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResponses {
    pub(super) metrics: Spanned<Vec<Spanned<String>>>,
    pub(super) probe: Option<RawProbe>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProbe {
    pub(super) kind: Spanned<String>,
    pub(super) interval_ms: Option<Spanned<f64>>,
}
