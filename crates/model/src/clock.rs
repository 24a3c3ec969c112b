//! Clock offsets between two hosts, NTP-style: read this host's
//! CLOCK_REALTIME (t0), ask the peer for its own (ta), read this clock
//! again (t1); the offset is `ta − (t0 + t1) / 2`, true within ± rtt/2
//! whatever the asymmetry of the path. Of several samples the one with the
//! smallest round trip is kept (the least queueing, the tightest bound).
//! `fleet bench` estimates each agent's clock over its pipe with it, and
//! `bench --start-at` the server's over the control connection.

use serde::Serialize;
use std::time::{SystemTime, UNIX_EPOCH};

/// This host's CLOCK_REALTIME in nanoseconds since the Unix epoch (0 for a
/// clock set before 1970).
pub fn realtime_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// One exchange: controller time sent (`t0`), the agent's time (`ta`),
/// controller time answered (`t1`), all ns since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Controller clock when the request left.
    pub t0: u64,
    /// The agent's clock while it answered.
    pub ta: u64,
    /// Controller clock when the answer arrived.
    pub t1: u64,
}

impl Sample {
    /// Round trip, ns (0 when the controller's clock stepped back).
    pub fn rtt_ns(&self) -> u64 {
        self.t1.saturating_sub(self.t0)
    }

    /// `ta − (t0 + t1) / 2`: agent clock minus controller clock.
    pub fn offset_ns(&self) -> i64 {
        let mid = (i128::from(self.t0) + i128::from(self.t1)) / 2;
        clamp_i64(i128::from(self.ta) - mid)
    }
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// An agent's clock against the controller's: agent time = controller time
/// + `offset_ns`, within ± `uncertainty_ns` (half the best round trip).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Offset {
    /// Agent clock minus controller clock, ns.
    pub offset_ns: i64,
    /// Round trip of the sample kept, ns.
    pub rtt_ns: u64,
    /// Half of it: the offset's bound.
    pub uncertainty_ns: u64,
    /// Samples taken.
    pub samples: u32,
}

impl Offset {
    /// Controller time of agent time `agent_ns`.
    pub fn to_controller(&self, agent_ns: u64) -> u64 {
        let v = i128::from(agent_ns) - i128::from(self.offset_ns);
        u64::try_from(v.max(0)).unwrap_or(u64::MAX)
    }

    /// Agent time of controller time `controller_ns`.
    pub fn to_agent(&self, controller_ns: u64) -> u64 {
        let v = i128::from(controller_ns) + i128::from(self.offset_ns);
        u64::try_from(v.max(0)).unwrap_or(u64::MAX)
    }
}

/// The offset of the sample with the smallest round trip (`None` without
/// samples, or when every sample had the controller's clock step back).
pub fn best(samples: &[Sample]) -> Option<Offset> {
    let n = u32::try_from(samples.len()).unwrap_or(u32::MAX);
    samples
        .iter()
        .filter(|s| s.t1 >= s.t0)
        .min_by_key(|s| s.rtt_ns())
        .map(|s| Offset {
            offset_ns: s.offset_ns(),
            rtt_ns: s.rtt_ns(),
            uncertainty_ns: s.rtt_ns() / 2,
            samples: n,
        })
}

/// Take `samples` (at least 1) exchanges: `now` reads the controller's
/// clock, `ask` one agent time (an error stops at once).
pub fn estimate_with<E>(
    samples: u32,
    mut now: impl FnMut() -> u64,
    mut ask: impl FnMut() -> Result<u64, E>,
) -> Result<Option<Offset>, E> {
    let mut got = Vec::new();
    for _ in 0..samples.max(1) {
        let t0 = now();
        let ta = ask()?;
        let t1 = now();
        got.push(Sample { t0, ta, t1 });
    }
    Ok(best(&got))
}
