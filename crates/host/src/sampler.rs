//! The sampler: cheap periodic reads of the kernel's CPU and network counters
//! into a [`Sample`]; the per-interval [`Delta`] arithmetic lives in
//! `model::sample` and is re-exported here.
//!
//! Reads `/proc/stat`, `/proc/softirqs`, `/proc/interrupts`, `/proc/net/dev`,
//! `/proc/net/softnet_stat`, `/proc/net/snmp` and `/proc/net/netstat` through a
//! [`Root`]. Under `ip netns exec` the `/proc/net` files are the namespace's;
//! the others are host-wide. Only `/proc/stat` is required: a missing optional
//! file leaves its section empty and adds a note. The JSON shape of [`Delta`]
//! is documented in `docs/stat.md`.
//!
//! [`Sampler::with_nic_stats`] also reads each interface's driver counters
//! (the `SIOCETHTOOL` ioctl `ethtool -S` uses on the live host, in-process,
//! names cached per interface; `ethtool/IF.json` under a fixture or
//! capture), which gives per-queue packets and drops in [`Delta::queues`].
//! Only when the ioctl is refused does it run `ethtool -S` per interface and
//! sample, and each such sample carries a note saying so.
//!
//! ```no_run
//! # fn main() -> Result<(), nettune_host::HostError> {
//! use nettune_host::{sampler::Sampler, Root};
//! let mut s = Sampler::new(Root::live());
//! let a = s.sample()?;
//! std::thread::sleep(std::time::Duration::from_secs(1));
//! let b = s.sample()?;
//! let d = b.delta(&a);
//! for c in &d.cpus {
//!     println!("{} softirq {:.1}% NET_RX {:.0}/s", c.cpu, c.pct.softirq, c.net_rx_per_s);
//! }
//! # Ok(()) }
//! ```

use crate::error::HostError;
use crate::ethtool::ioctl::IoctlStats;
use crate::ethtool::stats::driver_counters;
use crate::ethtool::{Ethtool, FixtureEthtool};
use crate::root::Root;
use model::parse::ethtool_stats::NicStats;
use model::parse::interrupts::parse_interrupts;
use model::parse::netdev::parse_netdev;
use model::parse::snmp::for_each_counter;
use model::parse::softirqs::parse_softirqs;
use model::parse::softnet::parse_softnet;
use model::parse::stat::parse_proc_stat;
use model::snapshot::Probe;
use model::Nanos;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub use model::sample::{
    CpuCount, CpuDelta, Delta, IfaceDelta, IrqDelta, QueueDelta, Sample, SoftnetDelta,
    SoftnetRates, ERROR_COUNTERS, STAT_SCHEMA_VERSION, WATCHED_COUNTERS,
};

/// Most interfaces whose driver counters one sample reads.
pub const MAX_NIC_STATS_IFACES: usize = 64;

/// Total time one sample may spend reading driver counters; interfaces
/// left when it runs out are skipped (and noted) for that sample.
pub const NIC_STATS_BUDGET: std::time::Duration = std::time::Duration::from_secs(3);

/// Where driver counters come from.
enum NicSource {
    /// The ioctl, names cached per interface.
    Live(Box<IoctlStats>),
    Fixture(FixtureEthtool),
}

impl NicSource {
    /// The counters, and a note when the ioctl was refused and ethtool(8) ran.
    fn stats(&mut self, iface: &str) -> (Probe<NicStats>, Option<String>) {
        match self {
            NicSource::Live(l) => driver_counters(l, iface),
            NicSource::Fixture(f) => (f.driver_stats(iface), None),
        }
    }
}

/// Driver-counter reading state of a sampler.
struct NicReader {
    source: NicSource,
    /// Interfaces asked for; `None`: every one under `/sys/class/net` but `lo`.
    only: Option<Vec<String>>,
    /// Interfaces whose driver reports no counters: not asked again.
    unsupported: Vec<String>,
}

/// Every file a [`Sampler`] reads, in reading order (`/proc/stat` first).
pub const SAMPLER_FILES: [&str; 7] = [STAT, SOFTIRQS, INTERRUPTS, NETDEV, SOFTNET, SNMP, NETSTAT];

const STAT: &str = "/proc/stat";
const SOFTIRQS: &str = "/proc/softirqs";
const INTERRUPTS: &str = "/proc/interrupts";
const NETDEV: &str = "/proc/net/dev";
const SOFTNET: &str = "/proc/net/softnet_stat";
const SNMP: &str = "/proc/net/snmp";
const NETSTAT: &str = "/proc/net/netstat";

/// Reads [`Sample`]s from a root. Keeps one read buffer across samples.
pub struct Sampler {
    root: Root,
    buf: String,
    devices: Option<Arc<BTreeMap<String, String>>>,
    rx_queues: Option<Arc<BTreeMap<String, u32>>>,
    nic: Option<NicReader>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("root", &self.root)
            .field("nic_stats", &self.nic.is_some())
            .finish()
    }
}

/// `CLOCK_MONOTONIC` now.
pub fn monotonic_now() -> Nanos {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Nanos(
        u64::try_from(t.tv_sec)
            .unwrap_or(0)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0)),
    )
}

impl Sampler {
    /// A sampler reading from `root` (`Root::live()` for this host).
    pub fn new(root: Root) -> Sampler {
        Sampler {
            root,
            buf: String::with_capacity(16 * 1024),
            devices: None,
            rx_queues: None,
            nic: None,
        }
    }

    /// Also read the driver counters of `ifaces` (every interface under
    /// `/sys/class/net` but `lo` when empty, at most
    /// [`MAX_NIC_STATS_IFACES`]) into [`Sample::nic`]: the `SIOCETHTOOL`
    /// ioctl on the live host (`ethtool -S` only if it is refused), the `stats` of `ethtool/IF.json` under another root.
    pub fn with_nic_stats(mut self, ifaces: &[String]) -> Sampler {
        let source = if self.root.is_live() {
            NicSource::Live(Box::default())
        } else {
            NicSource::Fixture(FixtureEthtool::new(&self.root))
        };
        self.nic = Some(NicReader {
            source,
            only: (!ifaces.is_empty()).then(|| ifaces.to_vec()),
            unsupported: Vec::new(),
        });
        self
    }

    /// Interfaces whose driver counters are read, in order.
    pub(crate) fn nic_ifaces(&self) -> Vec<String> {
        let Some(n) = &self.nic else {
            return Vec::new();
        };
        let mut v = match &n.only {
            Some(v) => v.clone(),
            None => self
                .root
                .list_interfaces()
                .unwrap_or_default()
                .into_iter()
                .filter(|i| i != "lo")
                .collect(),
        };
        v.retain(|i| !n.unsupported.contains(i));
        v.truncate(MAX_NIC_STATS_IFACES);
        v
    }

    fn read_nic(&mut self, missing: &mut Vec<String>) -> BTreeMap<String, NicStats> {
        let mut out = BTreeMap::new();
        let ifaces = self.nic_ifaces();
        let Some(n) = &mut self.nic else {
            return out;
        };
        let start = std::time::Instant::now();
        let mut fallback = None;
        if let NicSource::Live(l) = &mut n.source {
            // Names of interfaces no longer read are dropped.
            l.retain(&ifaces);
        }
        for iface in ifaces {
            if start.elapsed() >= NIC_STATS_BUDGET {
                missing.push(format!(
                    "driver counters of {iface} (skipped: {} s budget spent)",
                    NIC_STATS_BUDGET.as_secs()
                ));
                continue;
            }
            let (probe, note) = n.source.stats(&iface);
            if fallback.is_none() {
                fallback = note;
            }
            match probe {
                Probe::Ok { value } => {
                    out.insert(iface, value);
                }
                Probe::Unsupported { .. } => n.unsupported.push(iface),
                Probe::Absent => {}
                Probe::Error { message } => missing.push(message),
            }
        }
        missing.extend(fallback);
        out
    }

    /// RX queue count per interface (`/sys/class/net/IF/queues/rx-N`), read once.
    pub(crate) fn rx_queue_counts(&mut self) -> Arc<BTreeMap<String, u32>> {
        if let Some(d) = &self.rx_queues {
            return d.clone();
        }
        let mut map = BTreeMap::new();
        for iface in self.root.list_interfaces().unwrap_or_default() {
            let q = Path::new("/sys/class/net").join(&iface).join("queues");
            let n = self
                .root
                .list(&q)
                .unwrap_or_default()
                .iter()
                .filter(|e| e.starts_with("rx-"))
                .count();
            if n > 0 {
                map.insert(iface, u32::try_from(n).unwrap_or(u32::MAX));
            }
        }
        let d = Arc::new(map);
        self.rx_queues = Some(d.clone());
        d
    }

    /// The root read from.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Read `path` into the shared buffer; `Ok(false)` when it does not exist.
    /// Only a regular file, at most `root::MAX_READ` bytes (see `Root::read`).
    fn load(&mut self, path: &str) -> Result<bool, HostError> {
        self.root.read_into(path, &mut self.buf)
    }

    fn parse_opt<T>(
        &mut self,
        path: &str,
        missing: &mut Vec<String>,
        f: impl FnOnce(&str) -> Result<T, model::ParseError>,
    ) -> Result<Option<T>, HostError> {
        if !self.load(path)? {
            missing.push(path.to_string());
            return Ok(None);
        }
        f(&self.buf).map(Some).map_err(|source| HostError::Parse {
            path: path.into(),
            source,
        })
    }

    pub(crate) fn devices(&mut self) -> Arc<BTreeMap<String, String>> {
        if let Some(d) = &self.devices {
            return d.clone();
        }
        let mut map = BTreeMap::new();
        for iface in self.root.list_interfaces().unwrap_or_default() {
            let link = Path::new("/sys/class/net").join(&iface).join("device");
            if let Ok(dev) = self.root.link_name(&link) {
                if !dev.is_empty() {
                    map.insert(dev, iface);
                }
            }
        }
        let d = Arc::new(map);
        self.devices = Some(d.clone());
        d
    }

    /// Read every counter file once. Only `/proc/stat` is required; a file
    /// that exists but does not parse is an error naming it.
    pub fn sample(&mut self) -> Result<Sample, HostError> {
        let mut missing = Vec::new();
        if !self.load(STAT)? {
            return Err(HostError::NotFound { path: STAT.into() });
        }
        let at = monotonic_now();
        let stat = parse_proc_stat(&self.buf).map_err(|source| HostError::Parse {
            path: STAT.into(),
            source,
        })?;
        let softirqs = self.parse_opt(SOFTIRQS, &mut missing, parse_softirqs)?;
        let interrupts = self.parse_opt(INTERRUPTS, &mut missing, parse_interrupts)?;
        let netdev = self.parse_opt(NETDEV, &mut missing, parse_netdev)?;
        let softnet = self.parse_opt(SOFTNET, &mut missing, parse_softnet)?;
        let mut counters = [None; WATCHED_COUNTERS.len()];
        for path in [SNMP, NETSTAT] {
            let mut visit = |s: &str, n: &str, v: i64| {
                if let Some(i) = WATCHED_COUNTERS.iter().position(|k| {
                    k.len() == s.len() + 1 + n.len()
                        && k.starts_with(s)
                        && k.as_bytes()[s.len()] == b'.'
                        && k.ends_with(n)
                }) {
                    counters[i] = Some(v);
                }
            };
            if !self.load(path)? {
                missing.push(path.to_string());
                continue;
            }
            for_each_counter(&self.buf, &mut visit).map_err(|source| HostError::Parse {
                path: path.into(),
                source,
            })?;
        }
        let devices = self.devices();
        let rx_queue_counts = self.rx_queue_counts();
        let nic = self.read_nic(&mut missing);
        Ok(Sample {
            at,
            stat,
            softirqs,
            interrupts,
            netdev,
            softnet,
            counters,
            devices,
            missing,
            nic,
            rx_queue_counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::snapshot::{QueueKind, QueueRef};
    use model::{CpuId, IrqNumber};
    use std::path::PathBuf;

    fn testdata(set: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/sampler/testdata/kvm-6.18-iperf3")
            .join(set)
    }

    fn recorded() -> (Sample, Sample) {
        let mut a = Sampler::new(Root::new(testdata("a"))).sample().unwrap();
        let mut b = Sampler::new(Root::new(testdata("b"))).sample().unwrap();
        a.at = Nanos(1_000_000_000);
        b.at = Nanos(2_000_000_000);
        (a, b)
    }

    #[test]
    fn recorded_iperf3_interval() {
        let (a, b) = recorded();
        assert!(a.missing.is_empty(), "{:?}", a.missing);
        let d = b.delta(&a);
        assert_eq!(d.elapsed, Nanos(1_000_000_000));
        assert_eq!(d.cpus.len(), 2);
        let c0 = d.cpu(CpuId(0)).unwrap();
        assert_eq!(c0.net_rx, 75461 - 37909);
        assert_eq!(c0.net_rx_per_s, (75461 - 37909) as f64);
        let sn = c0.softnet.unwrap();
        let rows_a = a.softnet.as_ref().unwrap();
        let rows_b = b.softnet.as_ref().unwrap();
        assert_eq!(
            sn.processed,
            u64::from(rows_b.rows[0].processed - rows_a.rows[0].processed)
        );
        let sum: f64 = [
            c0.pct.usr,
            c0.pct.sys,
            c0.pct.irq,
            c0.pct.softirq,
            c0.pct.steal,
            c0.pct.iowait,
            c0.pct.idle,
        ]
        .iter()
        .sum();
        assert!((sum - 100.0).abs() < 1e-6, "{sum}");
        let nt1 = d.iface("nt1").unwrap();
        let (pa, pb) = (
            a.netdev.as_ref().unwrap().get("nt1").unwrap(),
            b.netdev.as_ref().unwrap().get("nt1").unwrap(),
        );
        assert_eq!(nt1.rx_packets, pb.rx.packets - pa.rx.packets);
        assert!(nt1.rx_packets.0 > 0);
        assert_eq!(nt1.rx_bps, ((pb.rx.bytes - pa.rx.bytes).0 * 8) as f64);
        let tx = d.irqs.iter().find(|i| i.irq == IrqNumber(42)).unwrap();
        assert_eq!(tx.name, "virtio3-tx");
        assert_eq!(tx.count, 1);
        assert_eq!(
            tx.per_cpu,
            vec![CpuCount {
                cpu: CpuId(1),
                count: 1
            }]
        );
        assert!(d.irqs.iter().all(|i| i.count > 0));
        assert!(d.counters.contains_key("TcpExt.ListenDrops"));
        assert!(d.counters["Tcp.InSegs"] > 0);
        let json = serde_json::to_string(&d).unwrap();
        let back: Delta = serde_json::from_str(&json).unwrap();
        assert_eq!(back.ifaces, d.ifaces);
        assert_eq!(back.irqs, d.irqs);
        assert_eq!(back.counters, d.counters);
        assert_eq!(back.cpus[1].times, d.cpus[1].times);
    }

    #[test]
    fn counters_going_backwards_saturate() {
        let (a, b) = recorded();
        let d = a.delta(&b);
        assert_eq!(d.elapsed, Nanos(0));
        assert!(d.cpus.iter().all(|c| c.times.total() == 0 && c.net_rx == 0));
        assert!(d
            .ifaces
            .iter()
            .all(|i| i.rx_packets.0 == 0 && i.rx_pps == 0.0));
        assert!(d.counters.values().all(|v| *v == 0));
        assert!(d.irqs.is_empty());
    }

    #[test]
    fn queue_and_iface_naming() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("proc/net")).unwrap();
        std::fs::create_dir_all(r.join("sys/devices/virtio2/net/eth0")).unwrap();
        std::fs::create_dir_all(r.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/virtio2/net/eth0",
            r.join("sys/class/net/eth0"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../../virtio2",
            r.join("sys/devices/virtio2/net/eth0/device"),
        )
        .unwrap();
        std::fs::create_dir_all(r.join("sys/devices/0000:00:06.0/net/ens6")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/0000:00:06.0/net/ens6",
            r.join("sys/class/net/ens6"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../../0000:00:06.0",
            r.join("sys/devices/0000:00:06.0/net/ens6/device"),
        )
        .unwrap();
        let write = |stat: &str, irq: &str| {
            std::fs::write(r.join("proc/stat"), stat).unwrap();
            std::fs::write(
                r.join("proc/interrupts"),
                format!(
                    "  CPU0 CPU1\n 38: 0 {irq} PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0\n \
                     50: {irq} 0 PCI-MSI-edge ens5-Tx-Rx-1\n \
                     60: {irq} {irq} PCI-MSIX 1-edge mlx5_comp2@pci:0000:00:06.0\n"
                ),
            )
            .unwrap();
            std::fs::write(
                r.join("proc/net/dev"),
                "Inter-|\n face |\n  ens5: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
            )
            .unwrap();
        };
        write("cpu 1 0 1 8\ncpu0 1 0 1 8\ncpu1 0 0 0 0\n", "10");
        let mut s = Sampler::new(Root::new(r));
        let a = s.sample().unwrap();
        assert_eq!(a.missing.len(), 4, "{:?}", a.missing);
        write("cpu 3 0 1 8\ncpu0 3 0 1 8\ncpu1 0 0 0 0\n", "25");
        let b = s.sample().unwrap();
        let d = b.delta(&a);
        assert_eq!(d.irqs.len(), 3);
        assert_eq!(d.irqs[2].iface.as_deref(), Some("ens6"));
        assert_eq!(d.irqs[2].count, 30);
        assert_eq!(d.irqs[0].iface.as_deref(), Some("eth0"));
        assert_eq!(
            d.irqs[0].queue,
            Some(QueueRef {
                kind: QueueKind::Rx,
                index: Some(0)
            })
        );
        assert_eq!(d.irqs[0].count, 15);
        assert_eq!(d.irqs[1].iface.as_deref(), Some("ens5"));
        assert_eq!(d.cpus[0].pct.usr, 100.0);
        assert!(d.cpus[0].softnet.is_none());
        assert!(d.notes.iter().any(|n| n.contains("/proc/softirqs")));
        assert!(d.counters.is_empty());
    }

    #[test]
    fn errors_name_the_file() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Sampler::new(Root::new(t.path()));
        let e = s.sample().unwrap_err();
        assert!(
            e.is_not_found() && e.to_string().contains("/proc/stat"),
            "{e}"
        );
        std::fs::create_dir_all(t.path().join("proc/net")).unwrap();
        std::fs::write(t.path().join("proc/stat"), "cpu 1 2 3 4\n").unwrap();
        std::fs::write(t.path().join("proc/net/softnet_stat"), "zz\n").unwrap();
        let e = s.sample().unwrap_err();
        assert!(e.to_string().contains("/proc/net/softnet_stat"), "{e}");
        std::fs::write(
            t.path().join("proc/net/softnet_stat"),
            "1 0 0 0 0 0 0 0 0\n",
        )
        .unwrap();
        std::fs::write(t.path().join("proc/net/snmp"), "Udp: A\n").unwrap();
        let e = s.sample().unwrap_err();
        assert!(e.to_string().contains("/proc/net/snmp"), "{e}");
    }

    #[test]
    fn nic_stats_from_a_fixture_root() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("proc")).unwrap();
        std::fs::create_dir_all(r.join("ethtool")).unwrap();
        for q in ["rx-0", "tx-0"] {
            std::fs::create_dir_all(r.join("sys/class/net/eth0/queues").join(q)).unwrap();
        }
        std::fs::create_dir_all(r.join("sys/class/net/lo")).unwrap();
        std::fs::write(r.join("proc/stat"), "cpu 1 0 0 0\ncpu0 1 0 0 0\n").unwrap();
        let stats = |v: u64| {
            format!(
                r#"{{"stats": {{"status": "ok", "value": {{"driver": {{"rx_queue_0_packets": {v}, "rx_queue_0_drops": 1}}}}}}}}"#
            )
        };
        std::fs::write(r.join("ethtool/eth0.json"), stats(10)).unwrap();
        // Without with_nic_stats nothing is read.
        let plain = Sampler::new(Root::new(r)).sample().unwrap();
        assert!(plain.nic.is_empty());
        let mut s = Sampler::new(Root::new(r)).with_nic_stats(&[]);
        let a = s.sample().unwrap();
        assert_eq!(a.nic["eth0"].driver["rx_queue_0_packets"], 10);
        assert_eq!(a.rx_queue_counts.get("eth0"), Some(&1));
        std::fs::write(r.join("ethtool/eth0.json"), stats(25)).unwrap();
        let mut b = s.sample().unwrap();
        b.at = Nanos(a.at.0 + 1_000_000_000);
        let d = b.delta(&a);
        assert_eq!(d.queues.len(), 1, "{:?}", d.queues);
        assert_eq!(
            (d.queues[0].packets, d.queues[0].drops),
            (Some(15), Some(0))
        );
        assert_eq!(d.nic_counters["eth0"]["rx_queue_0_packets"], 15);
        // A corrupt file is a note, not a failure.
        std::fs::write(r.join("ethtool/eth0.json"), "{").unwrap();
        let c = s.sample().unwrap();
        assert!(c.nic.is_empty());
        assert!(
            c.delta(&b)
                .notes
                .iter()
                .any(|n| n.contains("ethtool/eth0.json")),
            "{:?}",
            c.missing
        );
    }

    #[test]
    fn live_nic_stats() {
        if std::process::Command::new("ethtool")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: ethtool(8) is not installed");
            return;
        }
        let mut s = Sampler::new(Root::live()).with_nic_stats(&["lo".to_string()]);
        // lo has no driver statistics: unsupported, not an error, not asked again.
        let a = s.sample().unwrap();
        assert!(a.nic.is_empty() && a.missing.is_empty(), "{:?}", a.missing);
        assert!(s.nic_ifaces().is_empty());
        let Some(eth) = Root::live()
            .list_interfaces()
            .unwrap()
            .into_iter()
            .find(|i| i != "lo" && Path::new("/sys/class/net").join(i).join("device").exists())
        else {
            eprintln!("skipped: no NIC with a device");
            return;
        };
        let mut s = Sampler::new(Root::live()).with_nic_stats(std::slice::from_ref(&eth));
        let a = s.sample().unwrap();
        assert!(!a.nic[&eth].driver.is_empty(), "{eth}: {:?}", a.missing);
    }

    #[test]
    fn live_sample_works() {
        let mut s = Sampler::new(Root::live());
        let a = s.sample().unwrap();
        let b = s.sample().unwrap();
        let d = b.delta(&a);
        assert!(b.at >= a.at);
        assert!(!d.cpus.is_empty());
        assert!(b.netdev.as_ref().unwrap().get("lo").is_some());
    }
}
