//! Tuning plans: ordered changes to kernel knobs, computed by `tune::plan`
//! from a [`HostSnapshot`](crate::snapshot::HostSnapshot) and applied by
//! `host::apply` through a rollback journal.
//!
//! The JSON shape of [`Plan`] is what `nettune plan --json` prints and what
//! `nettune apply --plan FILE` reads (see `docs/tune.md`).

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

mod bdp;
mod origin;

pub use bdp::{
    Bdp, BdpError, BdpSpec, RttMeasured, BDP_MAX_RATE_BPS, BDP_MIN_RATE_BPS, MAX_HOST_LEN,
    MAX_RTT_US,
};
pub use origin::{Origin, RuleId};

/// Version of the plan JSON shape; bump on incompatible changes.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// Plan schema versions [`Plan::from_json`] reads.
pub const SUPPORTED_PLAN_SCHEMA_VERSIONS: &[u32] = &[PLAN_SCHEMA_VERSION];

/// Largest plan file a reader should accept (a plan for thousands of queues
/// is a few MiB); callers cap their reads with it.
pub const MAX_PLAN_BYTES: u64 = 16 << 20;

/// A plan file that could not be read. The caller adds the file name.
#[derive(Debug, Error)]
pub enum PlanReadError {
    /// Not JSON, or not the shape of a plan (serde_json's message has line and column).
    #[error("not a nettune plan: {0}")]
    Json(#[from] serde_json::Error),
    /// No `schema_version` key.
    #[error(
        "not a nettune plan: no schema_version (this nettune reads schema_version {supported})"
    )]
    NoSchemaVersion {
        /// The versions understood, e.g. `1`.
        supported: String,
    },
    /// A `schema_version` this build does not know.
    #[error("schema_version {found} is not understood by this nettune (it reads schema_version {supported}); make the plan again with this nettune")]
    UnknownSchema {
        /// The value found (first 32 characters of its JSON).
        found: String,
        /// The versions understood, e.g. `1`.
        supported: String,
    },
    /// `options.bdp` outside what `--bdp` takes.
    #[error("options.bdp: {0}")]
    Bdp(#[from] BdpError),
}

/// A tuning plan: what to write, in which order, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_SCHEMA_VERSION`] at the time of writing.
    pub schema_version: u32,
    /// Profile name (`latency`, `throughput`, `balanced` or a user profile).
    pub profile: String,
    /// The TOML text of a user profile, so `apply --plan` can re-plan after a
    /// channel change without the original file; `None` for built-ins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_toml: Option<String>,
    /// `HostSnapshot::fingerprint()` of the host the plan was made for.
    pub fingerprint: String,
    /// Hostname of that host, for messages.
    pub hostname: Option<String>,
    /// The options the plan was computed with.
    pub options: PlanOptions,
    /// Which network namespace the snapshot was taken in.
    pub scope: NetnsScope,
    /// The changes, in the order they must be applied (see [`Phase`]).
    pub changes: Vec<Change>,
    /// What the planner decided not to do, and why (absent knobs, VMs, namespaces).
    pub notes: Vec<PlanNote>,
}

/// Options given to the planner (the CLI flags of `nettune plan`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlanOptions {
    /// Interfaces to tune; empty = every interface with a device driver.
    #[serde(default)]
    pub ifaces: Vec<String>,
    /// CPUs the tuning may use (`--cpus`); `None` = all online CPUs.
    #[serde(default)]
    pub cpus: Option<CpuSet>,
    /// CPUs reserved for the application (`--exclude-cpus`).
    #[serde(default)]
    pub exclude_cpus: CpuSet,
    /// Bandwidth-delay product input (`--bdp RATE,RTT` or `--bdp RATE,HOST`).
    #[serde(default)]
    pub bdp: Option<Bdp>,
    /// With `--bdp RATE,HOST`: how `bdp.rtt_us` was measured (absent when the
    /// RTT was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_measured: Option<RttMeasured>,
    /// Namespace scope forced by `--netns-scope`; `None` = detected.
    #[serde(default)]
    pub netns: Option<NetnsScope>,
    /// Reload a module after writing a parameter snippet of it, so the value
    /// takes effect (`apply --allow-reload`, an experiment factor's `reload =
    /// true`); rollback then reloads it again. Off: the snippet is only
    /// written, for the next load.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reload_modules: bool,
}

/// Facts the planner needs beyond the [`HostSnapshot`](crate::snapshot::HostSnapshot),
/// read by the caller through the same root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostExtras {
    /// Network namespace the snapshot was read in.
    pub scope: NetnsScope,
    /// `/proc/net/softnet_stat` summed over CPUs; `None` when unreadable.
    pub softnet: Option<SoftnetTotals>,
    /// Seconds since boot (`/proc/uptime`), over which the softnet counts
    /// are a rate; `None` when unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<f64>,
    /// `cpuN/power/pm_qos_resume_latency_us` values by CPU, where the file exists.
    pub pm_qos: std::collections::BTreeMap<u32, String>,
}

impl Default for HostExtras {
    fn default() -> Self {
        HostExtras {
            scope: NetnsScope::Init,
            softnet: None,
            uptime_s: None,
            pm_qos: Default::default(),
        }
    }
}

impl SoftnetTotals {
    /// Sum `/proc/net/softnet_stat` over CPUs (parsed by
    /// [`parse_softnet`](crate::parse::softnet::parse_softnet)).
    pub fn parse(text: &str) -> Result<SoftnetTotals, crate::ParseError> {
        Ok(SoftnetTotals::sum(&crate::parse::softnet::parse_softnet(
            text,
        )?))
    }

    /// Sum the rows of a parsed softnet_stat.
    pub fn sum(s: &crate::parse::softnet::Softnet) -> SoftnetTotals {
        s.rows
            .iter()
            .fold(SoftnetTotals::default(), |t, r| SoftnetTotals {
                dropped: t.dropped.saturating_add(u64::from(r.dropped)),
                time_squeeze: t.time_squeeze.saturating_add(u64::from(r.time_squeeze)),
            })
    }
}

/// Softnet counters (`/proc/net/softnet_stat`) summed over CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SoftnetTotals {
    /// Packets dropped because the backlog queue was full.
    pub dropped: u64,
    /// Times net_rx_action ran out of budget or time with work left.
    pub time_squeeze: u64,
}

/// Whether the snapshot came from the initial network namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetnsScope {
    /// The initial namespace: global knobs may be planned.
    Init,
    /// A child namespace: only per-namespace and per-device knobs.
    Child,
}

/// Plan phases, in the order they are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Stop or ban irqbalance before placing IRQs by hand.
    Irqbalance,
    /// `ethtool -L`: channel counts (renumbers IRQs: they are re-read after).
    Channels,
    /// `/proc/irq/N/smp_affinity_list`.
    IrqAffinity,
    /// `rps_cpus`, `rps_flow_cnt`, `rps_sock_flow_entries`, `xps_cpus`.
    Steering,
    /// `ethtool -C` and `-G`: interrupt coalescing and ring sizes.
    Coalescing,
    /// `/proc/sys/net/...`.
    Sysctls,
    /// CPU frequency governor and PM QoS.
    Cpu,
    /// modprobe.d snippets for module parameters (reviewed; loaded only when the plan reloads the module, `reload_modules`).
    Modules,
}

impl Phase {
    /// All phases in order.
    pub const ALL: [Phase; 8] = [
        Phase::Irqbalance,
        Phase::Channels,
        Phase::IrqAffinity,
        Phase::Steering,
        Phase::Coalescing,
        Phase::Sysctls,
        Phase::Cpu,
        Phase::Modules,
    ];

    /// Short name as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Irqbalance => "irqbalance",
            Phase::Channels => "channels",
            Phase::IrqAffinity => "irq_affinity",
            Phase::Steering => "steering",
            Phase::Coalescing => "coalescing",
            Phase::Sysctls => "sysctls",
            Phase::Cpu => "cpu",
            Phase::Modules => "modules",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a file value is compared after reading it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueFormat {
    /// Text, whitespace runs folded.
    Text,
    /// A hex CPU mask (`rps_cpus`, `xps_cpus`, `smp_affinity`).
    Mask,
    /// A cpulist (`smp_affinity_list`).
    List,
}

impl ValueFormat {
    /// Whether two values mean the same under this format.
    pub fn same(self, a: &str, b: &str) -> bool {
        match self {
            ValueFormat::Text => fold_ws(a) == fold_ws(b),
            ValueFormat::Mask => match (CpuSet::parse_mask(a), CpuSet::parse_mask(b)) {
                (Ok(x), Ok(y)) => x == y,
                _ => fold_ws(a) == fold_ws(b),
            },
            ValueFormat::List => match (CpuSet::parse_list(a), CpuSet::parse_list(b)) {
                (Ok(x), Ok(y)) => x == y,
                _ => fold_ws(a) == fold_ws(b),
            },
        }
    }
}

/// Fold whitespace runs to one space and trim (sysctls print tabs).
pub fn fold_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Ethtool settings group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EthtoolGroup {
    /// `ethtool -l/-L` (attributes `combined`, `rx`, `tx`, `other`).
    Channels,
    /// `ethtool -g/-G` (attributes `rx`, `tx`, `rx_mini`, `rx_jumbo`).
    Rings,
    /// `ethtool -c/-C` (attributes by ethtool's names: `rx-usecs`, `adaptive-rx`...).
    Coalesce,
    /// `ethtool -k/-K` offloads (attributes by the kernel's feature names,
    /// [`crate::knobpath::ETHTOOL_FEATURES`]; values 0/1 as switches).
    Features,
}

impl EthtoolGroup {
    /// Name as in the fixture JSON (`channels`, `rings`, `coalesce`, `features`).
    pub fn name(self) -> &'static str {
        match self {
            EthtoolGroup::Channels => "channels",
            EthtoolGroup::Rings => "rings",
            EthtoolGroup::Coalesce => "coalesce",
            EthtoolGroup::Features => "features",
        }
    }
}

/// What a change writes to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// A sysfs/procfs file, written like `echo VALUE > PATH`.
    File {
        /// Path as on a live host.
        path: String,
        /// How to compare when reading back.
        format: ValueFormat,
    },
    /// An IRQ's affinity (`/proc/irq/N/smp_affinity_list`); `effective_affinity`
    /// is checked after the write. Managed IRQs refuse with EIO (EPERM on 6.12+).
    IrqAffinity {
        /// IRQ number.
        irq: u32,
        /// The owning interface.
        iface: String,
    },
    /// An ethtool attribute.
    Ethtool {
        /// Interface.
        iface: String,
        /// Settings group.
        group: EthtoolGroup,
        /// Attribute name.
        attr: String,
    },
    /// A system service (irqbalance): values are `running` / `stopped`.
    Service {
        /// Unit name without `.service`.
        name: String,
    },
    /// A module parameter, written as a modprobe.d snippet under the state
    /// directory for the user to review; it takes effect only on module reload.
    ModuleParam {
        /// Module name.
        module: String,
        /// Parameter name.
        param: String,
    },
    /// A file, symlink or directory nettune creates (systemd unit, plan copy
    /// for `apply --persist`); the value is the content or the link target.
    /// Rollback removes it.
    Created {
        /// Path as on a live host.
        path: String,
        /// What is created.
        what: CreatedKind,
    },
}

/// Kind of a [`Target::Created`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreatedKind {
    /// A regular file with the value as content.
    File,
    /// A symlink to the value.
    Symlink,
    /// A directory (value ignored).
    Dir,
}

impl Target {
    /// A short human description (`/proc/irq/266/smp_affinity_list`, `eth0 coalesce rx-usecs`).
    pub fn describe(&self) -> String {
        match self {
            Target::File { path, .. } => path.clone(),
            Target::IrqAffinity { irq, .. } => irq_affinity_path(*irq),
            Target::Ethtool { iface, group, attr } => {
                format!("ethtool {} {iface} {attr}", group.name())
            }
            Target::Service { name } => format!("service {name}"),
            Target::ModuleParam { module, param } => format!("module {module} {param}"),
            Target::Created { path, .. } => path.clone(),
        }
    }

    /// The device a change is on, when it is on one: the interface (and
    /// queue) of a `/sys/class/net/IF/...` file (`v1 rx-0`), of an IRQ or of
    /// an ethtool attribute.
    pub fn device(&self) -> Option<String> {
        match self {
            Target::File { path, .. } => {
                let rest = path.strip_prefix("/sys/class/net/")?;
                let mut parts = rest.split('/');
                let iface = parts.next().filter(|s| !s.is_empty())?;
                match (parts.next(), parts.next()) {
                    (Some("queues"), Some(q)) => Some(format!("{iface} {q}")),
                    _ => Some(iface.to_string()),
                }
            }
            Target::IrqAffinity { iface, .. } | Target::Ethtool { iface, .. } => {
                Some(iface.clone())
            }
            _ => None,
        }
    }
}

/// `/proc/irq/N/smp_affinity_list`.
pub fn irq_affinity_path(irq: u32) -> String {
    format!("/proc/irq/{irq}/smp_affinity_list")
}

/// One change of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Phase the change belongs to.
    pub phase: Phase,
    /// Knob name (`rps_cpus`, `net.core.rmem_max`, `rx-usecs`, `irqbalance`).
    pub knob: String,
    /// What is written.
    pub target: Target,
    /// Value in the snapshot (`None` when the snapshot did not record it).
    pub before: Option<String>,
    /// Value to write.
    pub after: String,
    /// What made the change: a rule (`rps`, `irq-affinity`...), a finding's
    /// fix, an experiment, persistence or `--bdp`; JSON spells it as one word.
    pub rule: Origin,
    /// One line of reason, specific to this host.
    pub reason: String,
    /// Where the rule comes from (a kernel document, a driver README or a published article).
    pub source: String,
}

/// Something the planner left out, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanNote {
    /// Rule id.
    pub rule: String,
    /// What and why.
    pub message: String,
}

impl Plan {
    /// Read a plan from JSON text (`nettune plan --json`, `apply --plan FILE`):
    /// the schema version must be one of [`SUPPORTED_PLAN_SCHEMA_VERSIONS`] (it is
    /// checked first, so a newer shape gets that message rather than a field
    /// error), and `options.bdp`, if any, within what `--bdp` takes. Memory is
    /// bounded by the input: CPU sets are capped by [`crate::cpuset::MAX_CPU`].
    pub fn from_json(text: &str) -> Result<Plan, PlanReadError> {
        Plan::from_json_slice(text.as_bytes())
    }

    /// [`Plan::from_json`] on bytes.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Plan, PlanReadError> {
        #[derive(Deserialize)]
        #[serde(rename = "Plan")]
        struct Probe {
            schema_version: Option<serde_json::Value>,
        }
        let supported = SUPPORTED_PLAN_SCHEMA_VERSIONS
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let probe: Probe = serde_json::from_slice(bytes)?;
        match probe.schema_version {
            None => return Err(PlanReadError::NoSchemaVersion { supported }),
            Some(v) => {
                let known = v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .is_some_and(|n| SUPPORTED_PLAN_SCHEMA_VERSIONS.contains(&n));
                if !known {
                    return Err(PlanReadError::UnknownSchema {
                        found: v.to_string().chars().take(32).collect(),
                        supported,
                    });
                }
            }
        }
        let plan: Plan = serde_json::from_slice(bytes)?;
        if let Some(b) = &plan.options.bdp {
            b.validate()?;
        }
        if let Some(m) = &plan.options.rtt_measured {
            m.validate()?;
        }
        Ok(plan)
    }

    /// Changes of one phase, in order.
    pub fn phase(&self, p: Phase) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(move |c| c.phase == p)
    }
}

/// What of the hardware a plan names is not on `snap` as it was: a
/// different hostname, interfaces gone, IRQs gone or owned by another
/// interface. One short phrase each, text escaped for a terminal; empty when
/// everything the plan names is still there (the fingerprint may still differ:
/// CPUs, NUMA nodes, a NIC's driver, PCI address or MAC).
pub fn hardware_changes(plan: &Plan, snap: &crate::snapshot::HostSnapshot) -> Vec<String> {
    use crate::text::Printable;
    let mut out = Vec::new();
    if let (Some(was), Some(now)) = (&plan.hostname, &snap.source.hostname) {
        if was != now {
            out.push(format!(
                "hostname {} is now {}",
                Printable(was),
                Printable(now)
            ));
        }
    }
    let mut gone = std::collections::BTreeSet::new();
    let mut irqs = std::collections::BTreeSet::new();
    for c in &plan.changes {
        let iface = match &c.target {
            Target::IrqAffinity { irq, iface } => {
                match snap.irq(crate::IrqNumber(*irq)) {
                    None => {
                        irqs.insert(format!("IRQ {irq} ({}) is gone", Printable(iface)));
                    }
                    Some(i) if i.interface.as_deref() != Some(iface.as_str()) => {
                        irqs.insert(format!(
                            "IRQ {irq} is now {} (was {})",
                            Printable(i.interface.as_deref().unwrap_or("no interface's")),
                            Printable(iface)
                        ));
                    }
                    Some(_) => {}
                }
                Some(iface.as_str())
            }
            Target::Ethtool { iface, .. } => Some(iface.as_str()),
            Target::File { path, .. } => path
                .strip_prefix("/sys/class/net/")
                .and_then(|r| r.split('/').next()),
            _ => None,
        };
        if let Some(n) = iface.filter(|n| snap.interface(n).is_none()) {
            gone.insert(n.to_string());
        }
    }
    out.extend(
        gone.iter()
            .map(|n| format!("interface {} is gone", Printable(n))),
    );
    out.extend(irqs);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdp_parses_rates_and_rtts() {
        let b = Bdp::parse("100mbit,100ms").unwrap();
        assert_eq!(b.rate_bps, 100_000_000);
        assert_eq!(b.rtt_us, 100_000);
        assert_eq!(b.bytes(), 1_250_000);
        assert_eq!(Bdp::parse("10gbit,1ms").unwrap().bytes(), 1_250_000);
        assert_eq!(Bdp::parse("1.5G,250us").unwrap().rate_bps, 1_500_000_000);
        assert!(Bdp::parse("fast,1ms").is_err());
        assert!(Bdp::parse("10gbit").is_err());
        assert!(Bdp::parse("10gbit,1h").is_err());
        assert!(Bdp::parse("0,1ms").is_err());
    }

    #[test]
    fn bdp_second_part_is_an_rtt_or_a_host_to_measure() {
        let m = |h: &str| BdpSpec::Measure {
            rate_bps: 10_000_000_000,
            host: h.into(),
        };
        assert_eq!(
            BdpSpec::parse("10gbit,20ms").unwrap(),
            BdpSpec::Given(Bdp::parse("10gbit,20ms").unwrap())
        );
        assert_eq!(BdpSpec::parse("10gbit,peer-b").unwrap(), m("peer-b"));
        assert_eq!(BdpSpec::parse("10gbit, 10.0.0.2").unwrap(), m("10.0.0.2"));
        assert_eq!(BdpSpec::parse("10gbit,::1").unwrap(), m("::1"));
        assert_eq!(BdpSpec::parse("10gbit,[fe80::1]").unwrap(), m("[fe80::1]"));
        // Mistyped durations stay RTT errors, not host names.
        for bad in ["10gbit,1h", "10gbit,-5ms", "10gbit,5 ms"] {
            let e = BdpSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("RTT"), "{bad}: {e}");
        }
        assert!(BdpSpec::parse("fast,peer").is_err());
        assert!(BdpSpec::parse("10tbit,peer").is_err());
        assert!(BdpSpec::parse(&format!("1gbit,a{}", "b".repeat(300))).is_err());
        let ok = RttMeasured {
            host: "peer-b".into(),
            address: "10.0.0.2".into(),
            method: "icmp".into(),
            samples: 5,
            median_us: 120,
        };
        assert!(ok.validate().is_ok());
        for bad in [
            RttMeasured {
                host: "a\nb".into(),
                ..ok.clone()
            },
            RttMeasured {
                address: "x".into(),
                ..ok.clone()
            },
            RttMeasured {
                method: "guess".into(),
                ..ok.clone()
            },
            RttMeasured {
                median_us: 0,
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn absurd_bdp_values_get_a_one_line_error() {
        for (bad, says) in [
            ("0,1ms", "rate `0`"),
            ("-1gbit,1ms", "rate `-1gbit`"),
            ("10gbit,-5ms", "RTT `-5ms`"),
            ("10gbit,0ms", "RTT `0ms`"),
            ("10gbit,100s", "RTT `100s`"),
            ("10tbit,1ms", "rate `10tbit`"),
            ("99999999999999999999999999gbit,1ms", "outside"),
            ("10gbit,99999999999999999999999s", "outside"),
            ("0.0001bit,1ms", "rate"),
            ("10gbit,0.1us", "RTT"),
        ] {
            let e = Bdp::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
        assert_eq!(Bdp::parse("2tbit,10s").unwrap().rate_bps, 2_000_000_000_000);
        assert_eq!(Bdp::parse("1kbit,1us").unwrap().rtt_us, 1);
        assert!(Bdp {
            rate_bps: u64::MAX,
            rtt_us: 1
        }
        .validate()
        .is_err());
        assert_eq!(
            Bdp {
                rate_bps: u64::MAX,
                rtt_us: u64::MAX
            }
            .bytes(),
            u64::MAX
        );
    }

    #[test]
    fn softnet_totals_sum_32_bit_counters_without_overflow() {
        let line = "ffffffff ffffffff fffffffe 0 0 0 0 0 0\n";
        let t = SoftnetTotals::parse(&line.repeat(2)).unwrap();
        assert_eq!(t.dropped, 2 * u64::from(u32::MAX));
        assert_eq!(t.time_squeeze, 2 * u64::from(u32::MAX - 1));
        // The kernel prints 32-bit counters; a wider value is not softnet_stat.
        assert!(SoftnetTotals::parse("ffffffffffffffff 1 1 0 0 0 0 0 0\n").is_err());
    }

    #[test]
    fn formats_compare_by_meaning() {
        assert!(ValueFormat::Mask.same("00000000,000001fe", "1fe"));
        assert!(ValueFormat::List.same("0-2", "0,1,2"));
        assert!(ValueFormat::Text.same("4096\t87380\t6291456", "4096 87380 6291456"));
        assert!(!ValueFormat::Text.same("1", "2"));
    }

    #[test]
    fn plan_round_trips_through_json() {
        let plan = Plan {
            schema_version: PLAN_SCHEMA_VERSION,
            profile: "throughput".into(),
            profile_toml: None,
            fingerprint: "00".into(),
            hostname: None,
            options: PlanOptions::default(),
            scope: NetnsScope::Init,
            changes: vec![Change {
                phase: Phase::Steering,
                knob: "rps_cpus".into(),
                target: Target::File {
                    path: "/sys/class/net/eth0/queues/rx-0/rps_cpus".into(),
                    format: ValueFormat::Mask,
                },
                before: Some("0".into()),
                after: "1fe".into(),
                rule: Origin::Rule(RuleId::Rps),
                reason: "r".into(),
                source: "s".into(),
            }],
            notes: vec![],
        };
        let j = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<Plan>(&j).unwrap(), plan);
        assert_eq!(Plan::from_json(&j).unwrap(), plan);
    }
}
