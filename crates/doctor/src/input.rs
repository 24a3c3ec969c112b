//! What the rules look at ([`Input`]) and what is computed from it once per
//! run ([`Cx`]).
//!
//! [`Input`] is plain data the caller fills: the snapshot is required, every
//! other fact is optional, so a rule that needs a missing fact skips with a
//! reason instead of guessing. To add a fact: a public `Option` (or `Vec`)
//! field here, its default in [`Input::new`], the caller's read in `host`,
//! and the rules that use it call [`Cx::need`] on it.

use crate::finding::Fix;
use crate::rules::Skip;
use model::parse::sockstat::Sockstat;
use model::plan::{Bdp, Change, HostExtras, Plan, PlanOptions, Target};
use model::sample::{CounterReset, Delta, IfaceDelta, Sample, MAX_RESETS};
use model::snapshot::HostSnapshot;
use model::CpuSet;
use std::collections::{BTreeMap, HashMap};
use tune::profile::Profile;
use tune::RuleId;

/// Skip reason of rate rules when no samples were given.
pub const NO_SAMPLES: &str = "no samples (a live host samples for --sample S seconds)";
/// Skip reason of rate rules for a capture without counter samples.
pub const NO_SAMPLES_IN_CAPTURE: &str = "no samples in the capture";

/// Everything doctor knows about the host. Build with [`Input::new`] and set
/// the fields you have.
#[derive(Debug, Clone)]
pub struct Input {
    /// The host snapshot (`host::read_snapshot`).
    pub snapshot: HostSnapshot,
    /// The planner's extras (`host::extras::read_extras`).
    pub extras: HostExtras,
    /// Counter samples in time order (`host::sampler`); two or more make a
    /// window of rates. Fewer: the rate rules skip with [`Input::no_samples`].
    pub samples: Vec<Sample>,
    /// A window already built from samples streamed through a
    /// [`WindowBuilder`] (a capture's samples, read one at a time); used
    /// instead of `samples` when set.
    pub window: Option<Window>,
    /// Why there are no samples, for the rate rules' skip reason.
    pub no_samples: String,
    /// Without a window: one reading of the counters, whose values are
    /// totals since boot. Rate rules report them at info, with the uptime,
    /// instead of skipping.
    pub since_boot: Option<SinceBoot>,
    /// The `--profile` intent; `None` = none given (fixes are planned with
    /// `balanced`, intent-specific rules stay quiet).
    pub profile: Option<Profile>,
    /// How the profile was named on the command line (a built-in's name or a
    /// TOML path), repeated in fix commands; `None` = the profile's name.
    pub profile_arg: Option<String>,
    /// `--bdp RATE,RTT`.
    pub bdp: Option<Bdp>,
    /// `/proc/net/sockstat` at the end of the window (TIME_WAIT, orphans, TCP memory).
    pub sockstat: Option<Sockstat>,
    /// The plan of the newest generation in force in the journal
    /// (`/var/lib/nettune`), if any.
    pub applied: Option<Plan>,
    /// How the root was named on the command line (`--root DIR`), repeated in
    /// the `nettune plan` commands of fixes; `None` for the live host.
    pub root_arg: Option<String>,
    /// Files the caller could not read or parse: (path, reason). A rule that
    /// needs one skips with this reason.
    pub unreadable: Vec<(String, String)>,
    /// Host facts beyond the snapshot (`host::doctor_facts::read_doctor_facts`):
    /// power states, busiest network processes, qdiscs, boot files, conntrack,
    /// TCP memory and socket RTTs, platform; each part names its file when missing.
    pub facts: model::doctor_facts::DoctorFacts,
    /// The cloud instance's allowances (`doctor --allowance RATE,PPS`), for
    /// `cloud-allowance`'s arithmetic; unset = unknown.
    pub allowance: Allowance,
    /// Drops by the kernel's reason over the window (`skb:kfree_skb`,
    /// `host::drops`), or why they could not be read.
    pub drops: Result<model::drops::DropInterval, model::drops::Unavailable>,
}

/// A cloud instance's network allowances, as the provider states them for
/// its instance type. Neither can be read on the instance itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allowance {
    /// Bandwidth allowance, bits per second; `None` = the link speed.
    pub bandwidth_bps: Option<u64>,
    /// Packets-per-second allowance; `None` = not known.
    pub pps: Option<u64>,
}

impl Input {
    /// An input with only the snapshot: no samples, no intent, default extras.
    pub fn new(snapshot: HostSnapshot) -> Input {
        Input {
            snapshot,
            extras: HostExtras::default(),
            samples: Vec::new(),
            window: None,
            no_samples: NO_SAMPLES.to_string(),
            since_boot: None,
            profile: None,
            profile_arg: None,
            bdp: None,
            sockstat: None,
            applied: None,
            root_arg: None,
            unreadable: Vec::new(),
            facts: model::doctor_facts::DoctorFacts::default(),
            allowance: Allowance::default(),
            drops: Err(model::drops::Unavailable::NotRead),
        }
    }

    /// Why `path` could not be read, if the caller said so.
    pub fn unreadable(&self, path: &str) -> Option<&str> {
        self.unreadable
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, r)| r.as_str())
    }
}

/// Counters read once, without a window: totals since boot.
#[derive(Debug, Clone)]
pub struct SinceBoot {
    /// The reading.
    pub sample: Sample,
    /// `/proc/uptime`, seconds; `None` when it could not be read.
    pub uptime_s: Option<f64>,
}

impl SinceBoot {
    /// Watched counter `name` (`Udp.RcvbufErrors`) since boot, if read.
    pub fn counter(&self, name: &str) -> Option<u64> {
        let i = model::sample::WATCHED_COUNTERS
            .iter()
            .position(|k| *k == name)?;
        let v = (*self.sample.counters.get(i)?)?;
        u64::try_from(v).ok()
    }

    /// `since boot (up 3.2 d)`, or `since boot` without an uptime.
    pub fn span(&self) -> String {
        match self.uptime_s {
            Some(u) if u.is_finite() && u >= 0.0 => {
                let (v, unit) = if u >= 86_400.0 {
                    (u / 86_400.0, "d")
                } else if u >= 3600.0 {
                    (u / 3600.0, "h")
                } else {
                    (u, "s")
                };
                format!("since boot (up {v:.1} {unit})")
            }
            _ => "since boot (uptime unknown)".to_string(),
        }
    }
}

/// Skip reason of rate rules with a single sample.
pub const ONE_SAMPLE: &str = "one sample only: rates need two";

/// What the rules look at in one interval of the window (not the whole
/// [`Delta`], so a long window costs a few bytes per interval).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Interval {
    /// The watched protocol counters' increase ([`Delta::counters`]).
    pub counters: BTreeMap<String, u64>,
    /// Some CPU's softnet `time_squeeze` grew.
    pub squeezed: bool,
}

impl Interval {
    /// The summary of `d`.
    pub fn of(d: &Delta) -> Interval {
        Interval {
            counters: d.counters.clone(),
            squeezed: d
                .cpus
                .iter()
                .any(|c| c.softnet.is_some_and(|s| s.time_squeeze > 0)),
        }
    }
}

/// The sampled window: the whole span and each interval.
#[derive(Debug, Clone)]
pub struct Window {
    /// First sample to last.
    pub total: Delta,
    /// Each consecutive pair, in order.
    pub intervals: Vec<Interval>,
    /// Length of the window in seconds (> 0).
    pub seconds: f64,
    /// Counters that went backwards in the whole span or in some interval
    /// (read as resets, counted as 0), at most [`MAX_RESETS`].
    pub resets: Vec<CounterReset>,
    /// `total.ifaces` by name (the first of a name).
    iface_at: HashMap<String, usize>,
}

/// Builds a [`Window`] from samples pushed one at a time, holding only the
/// first and the latest sample and a summary per interval: memory does not
/// grow with the samples' size times their number.
#[derive(Debug, Default)]
pub struct WindowBuilder {
    first: Option<Sample>,
    last: Option<Sample>,
    intervals: Vec<Interval>,
    resets: Vec<CounterReset>,
    count: usize,
}

fn add_resets(to: &mut Vec<CounterReset>, d: &Delta) {
    for r in &d.resets {
        if to.len() >= MAX_RESETS {
            return;
        }
        if !to.contains(r) {
            to.push(r.clone());
        }
    }
}

impl WindowBuilder {
    /// An empty builder.
    pub fn new() -> WindowBuilder {
        WindowBuilder::default()
    }

    /// The next sample, in time order.
    pub fn push(&mut self, s: Sample) {
        self.count = self.count.saturating_add(1);
        if let Some(prev) = self.last.as_ref().or(self.first.as_ref()) {
            let d = s.delta(prev);
            add_resets(&mut self.resets, &d);
            self.intervals.push(Interval::of(&d));
        }
        if self.first.is_none() {
            self.first = Some(s);
        } else {
            self.last = Some(s);
        }
    }

    /// Samples pushed.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The window; `None` with fewer than two samples or no time between
    /// the first and the last.
    pub fn finish(self) -> Option<Window> {
        let (first, last) = (self.first?, self.last?);
        Window::new(last.delta(&first), self.intervals, self.resets)
    }
}

impl Window {
    fn new(
        total: Delta,
        intervals: Vec<Interval>,
        mut resets: Vec<CounterReset>,
    ) -> Option<Window> {
        let seconds = total.elapsed.as_secs_f64();
        if seconds <= 0.0 {
            return None;
        }
        // The span's own resets first: they are what the totals show.
        let mut all = Vec::new();
        add_resets(&mut all, &total);
        for r in resets.drain(..) {
            if all.len() < MAX_RESETS && !all.contains(&r) {
                all.push(r);
            }
        }
        let mut iface_at = HashMap::with_capacity(total.ifaces.len());
        for (k, i) in total.ifaces.iter().enumerate() {
            iface_at.entry(i.name.clone()).or_insert(k);
        }
        Some(Window {
            total,
            intervals,
            seconds,
            resets: all,
            iface_at,
        })
    }

    /// The window over `samples` (time order); `None` with fewer than two
    /// samples or no time between the first and the last.
    pub fn from_samples(samples: &[Sample]) -> Option<Window> {
        let (first, last) = (samples.first()?, samples.last()?);
        if samples.len() < 2 {
            return None;
        }
        let mut resets = Vec::new();
        let intervals = samples
            .windows(2)
            .map(|w| {
                let d = w[1].delta(&w[0]);
                add_resets(&mut resets, &d);
                Interval::of(&d)
            })
            .collect();
        Window::new(last.delta(first), intervals, resets)
    }

    /// The change of interface `name` over the window (a map lookup, not a
    /// search: rules ask once per interface).
    pub fn iface(&self, name: &str) -> Option<&IfaceDelta> {
        self.total.ifaces.get(*self.iface_at.get(name)?)
    }

    /// Total of watched counter `name` (`Udp.RcvbufErrors`) over the window.
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.total.counters.get(name).copied()
    }

    /// `counter(name)` per second.
    pub fn counter_rate(&self, name: &str) -> Option<f64> {
        self.counter(name).map(|v| v as f64 / self.seconds)
    }

    /// In how many intervals counter `name` grew.
    pub fn intervals_growing(&self, name: &str) -> usize {
        self.intervals
            .iter()
            .filter(|d| d.counters.get(name).is_some_and(|v| *v > 0))
            .count()
    }
}

/// Why doctor has no plan to compare the host against.
#[derive(Debug, thiserror::Error)]
pub enum NoPlan {
    /// The profile could not be loaded.
    #[error(transparent)]
    Profile(#[from] tune::ProfileError),
    /// The planner refused the host.
    #[error(transparent)]
    Plan(#[from] tune::PlanError),
}

/// The input with what several rules need computed once: the window, the
/// plan for the intent, the snapshot findings (`crate::snapshot::findings`).
#[derive(Debug)]
pub struct Cx<'a> {
    /// The input.
    pub input: &'a Input,
    /// The sampled window, if there are two or more samples.
    pub window: Option<Window>,
    /// The profile fixes are planned with (the intent, else `balanced`).
    pub plan_profile: String,
    /// The plan for that profile on this host, or why there is none.
    pub plan: Result<Plan, NoPlan>,
    /// The resolved profile of `plan_profile`.
    profile: Option<Profile>,
    /// The findings of the snapshot alone (`crate::snapshot::findings`).
    pub host_findings: Vec<model::findings::Finding>,
    /// Online CPUs without isolated ones.
    pub usable: CpuSet,
    /// Physical cores among them (SMT siblings counted once).
    pub cores: usize,
}

impl<'a> Cx<'a> {
    /// Compute the shared parts of `input`.
    pub fn new(input: &'a Input) -> Cx<'a> {
        let s = &input.snapshot;
        let window = match &input.window {
            Some(w) => Some(w.clone()),
            None => Window::from_samples(&input.samples),
        };
        let profile = match &input.profile {
            Some(p) => Ok(p.clone()),
            None => tune::profile::builtin("balanced"),
        };
        let plan_profile = input.profile_arg.clone().unwrap_or_else(|| {
            input
                .profile
                .as_ref()
                .map_or_else(|| "balanced".to_string(), |p| p.name.clone())
        });
        let opts = PlanOptions {
            bdp: input.bdp,
            ..PlanOptions::default()
        };
        let (profile, plan) = match profile {
            Ok(p) => {
                let plan = tune::plan(s, &input.extras, &p, &opts).map_err(NoPlan::from);
                (Some(p), plan)
            }
            Err(e) => (None, Err(NoPlan::from(e))),
        };
        let usable = s.cpu.online.difference(&s.cpu.isolated);
        let cores = physical_cores(s, &usable);
        Cx {
            input,
            window,
            plan_profile,
            plan,
            profile,
            host_findings: crate::snapshot::findings(s),
            usable,
            cores,
        }
    }

    /// Physical cores among the usable CPUs of `cpus`.
    pub fn cores_in(&self, cpus: &CpuSet) -> usize {
        physical_cores(self.snap(), &self.usable.intersection(cpus))
    }

    /// Usable physical cores of `iface`'s NUMA node (all usable ones when the
    /// node is unknown or the host has one node): the cores its queues and
    /// RPS are planned on.
    pub fn iface_cores(&self, iface: &model::snapshot::Interface) -> usize {
        let s = self.snap();
        let multi = s.nodes.iter().filter(|n| !n.cpus.is_empty()).count() > 1;
        let node = iface
            .numa_node
            .and_then(|n| u32::try_from(n).ok())
            .and_then(|n| s.nodes.iter().find(|x| x.id.0 == n));
        match node {
            Some(n) if multi => self.cores_in(&n.cpus),
            _ => self.cores,
        }
    }

    /// The snapshot.
    pub fn snap(&self) -> &'a HostSnapshot {
        &self.input.snapshot
    }

    /// Counters since boot, when there is no window to judge rates on.
    pub fn since_boot(&self) -> Option<&SinceBoot> {
        if self.window.is_some() {
            return None;
        }
        self.input.since_boot.as_ref()
    }

    /// The window, or the skip reason of a rate rule.
    pub fn need_window(&self) -> Result<&Window, Skip> {
        self.window.as_ref().ok_or_else(|| {
            Skip(if self.input.samples.len() == 1 {
                ONE_SAMPLE.to_string()
            } else {
                self.input.no_samples.clone()
            })
        })
    }

    /// `fact`, or a skip naming `path` (with the caller's reason when it had one).
    pub fn need<'b, T>(&self, fact: &'b Option<T>, path: &str) -> Result<&'b T, Skip> {
        fact.as_ref().ok_or_else(|| {
            Skip(match self.input.unreadable(path) {
                Some(r) => format!("{path}: {r}"),
                None => format!("{path}: not found"),
            })
        })
    }

    /// The intent's name, if one was given.
    pub fn intent(&self) -> Option<&str> {
        self.input.profile.as_ref().map(|p| p.base.as_str())
    }

    /// Whether the profile the user asked for (`--profile`) turns the
    /// planner rule `rule` off: doctor then does not advise what it avoids.
    pub fn profile_avoids(&self, rule: RuleId) -> bool {
        self.input
            .profile
            .as_ref()
            .is_some_and(|p| !p.enabled(rule))
    }

    /// `nettune plan --profile P [--root DIR] [--bdp ..] [--iface IF]`.
    pub fn plan_command(&self, iface: Option<&str>) -> String {
        let mut c = format!("nettune plan --profile {}", self.plan_profile);
        if let Some(r) = &self.input.root_arg {
            c.push_str(&format!(" --root {r}"));
        }
        if let Some(b) = &self.input.bdp {
            c.push_str(&format!(" --bdp {}", bdp_arg(b)));
        }
        if let Some(i) = iface {
            c.push_str(&format!(" --iface {i}"));
        }
        c
    }

    /// Changes of the plan made by `rules`, about `iface` when given. An
    /// interface the default plan leaves out (a virtual device: veth, bond)
    /// is planned alone, as `--iface IF` does.
    pub fn plan_changes(&self, rules: &[RuleId], iface: Option<&str>) -> Vec<Change> {
        let Ok(plan) = &self.plan else {
            return Vec::new();
        };
        let pick = |p: &Plan| -> Vec<Change> {
            p.changes
                .iter()
                .filter(|c| rules.iter().any(|r| c.rule == *r))
                .filter(|c| iface.is_none_or(|i| change_is_about(c, i)))
                .cloned()
                .collect()
        };
        let found = pick(plan);
        match (iface, &self.profile) {
            (Some(i), Some(profile)) if found.is_empty() && self.snap().interface(i).is_some() => {
                let opts = PlanOptions {
                    ifaces: vec![i.to_string()],
                    bdp: self.input.bdp,
                    ..PlanOptions::default()
                };
                tune::plan(self.snap(), &self.input.extras, profile, &opts)
                    .map(|p| pick(&p))
                    .unwrap_or_default()
            }
            _ => found,
        }
    }

    /// How many changes [`Cx::plan_command`] for `iface` plans, so a fix
    /// says what its `nettune apply` will do, not only its own part.
    fn command_changes(&self, iface: Option<&str>) -> usize {
        let (Some(i), Some(profile)) = (iface, &self.profile) else {
            return self.plan.as_ref().map_or(0, |p| p.changes.len());
        };
        let opts = PlanOptions {
            ifaces: vec![i.to_string()],
            bdp: self.input.bdp,
            ..PlanOptions::default()
        };
        tune::plan(self.snap(), &self.input.extras, profile, &opts).map_or(0, |p| p.changes.len())
    }

    /// A fix from the plan: the changes of `rules` (about `iface`), the
    /// command that makes them and `text`; when the plan has none of them,
    /// `text` alone with `fallback` appended.
    pub fn plan_fix(
        &self,
        rules: &[RuleId],
        iface: Option<&str>,
        text: &str,
        fallback: &str,
    ) -> Fix {
        let changes = self.plan_changes(rules, iface);
        if changes.is_empty() {
            let mut t = text.to_string();
            if !fallback.is_empty() {
                t.push(' ');
                t.push_str(fallback);
            }
            return Fix {
                text: t,
                ..Fix::default()
            };
        }
        let s = |n: usize| if n == 1 { "" } else { "s" };
        let all = self.command_changes(iface);
        Fix {
            text: format!(
                "{text} {} of the {} plan's changes {} for it: review them with the command; `nettune apply` with the same flags makes {all} change{}.",
                changes.len(),
                self.plan_profile,
                if changes.len() == 1 { "is" } else { "are" },
                s(all)
            ),
            command: Some(self.plan_command(iface)),
            changes,
            app: None,
            bench: None,
        }
    }
}

/// Whether a plan change concerns interface `iface`.
fn change_is_about(c: &Change, iface: &str) -> bool {
    match &c.target {
        Target::File { path, .. } => path.contains(&format!("/net/{iface}/")),
        Target::IrqAffinity { iface: i, .. } | Target::Ethtool { iface: i, .. } => i == iface,
        _ => false,
    }
}

/// `usable` counted once per physical core (SMT siblings together).
fn physical_cores(s: &HostSnapshot, usable: &CpuSet) -> usize {
    let mut seen = CpuSet::new();
    let mut n = 0;
    for c in usable.iter() {
        if seen.contains(c) {
            continue;
        }
        n += 1;
        seen.insert(c);
        if let Some(cpu) = s.cpu(c) {
            seen = seen.union(&cpu.siblings);
        }
    }
    n
}

/// `--bdp` as a user would write it (`100mbit,100ms`).
pub fn bdp_arg(b: &Bdp) -> String {
    let r = b.rate_bps;
    let rate = [
        (1_000_000_000_000, "tbit"),
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ]
    .iter()
    .find(|(d, _)| r.is_multiple_of(*d))
    .map_or_else(|| format!("{r}bit"), |(d, u)| format!("{}{u}", r / d));
    let t = b.rtt_us;
    let rtt = if t.is_multiple_of(1_000_000) {
        format!("{}s", t / 1_000_000)
    } else if t.is_multiple_of(1000) {
        format!("{}ms", t / 1000)
    } else {
        format!("{t}us")
    };
    format!("{rate},{rtt}")
}
