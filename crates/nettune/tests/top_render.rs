//! `nettune top` screens rendered to ratatui's `TestBackend` and snapshotted
//! with insta: fixture snapshots (tests/fixtures) with synthetic deltas.

#![allow(clippy::unwrap_used)]

use host::sampler::{CpuCount, CpuDelta, Delta, IfaceDelta, IrqDelta, SoftnetRates};
use model::parse::ethtool_stats::QueueDir;
use model::parse::stat::{CpuPercent, CpuTimes};
use model::snapshot::HostSnapshot;
use model::{Bytes, CpuId, IrqNumber, Nanos, Packets};
use nettune::top::draw::{draw, heat_color};
use nettune::top::findings::{Board, FixedFindings, Level, TopFinding};
use nettune::top::screen::{Inputs, QueueRates};
use nettune::top::{App, Screen, SortKey, View};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;
use ratatui::Terminal;
use std::path::PathBuf;

fn fixture(name: &str) -> HostSnapshot {
    host::read_snapshot(&host::Root::new(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name),
    ))
}

const SEC: u64 = 1_000_000_000;

/// A CPU: shares (usr, sys, irq, soft, steal; idle is the rest), NET_RX/s,
/// softnet drops/s and squeezes/s.
#[allow(clippy::too_many_arguments)]
fn cpu(
    id: u32,
    usr: f64,
    sys: f64,
    irq: f64,
    soft: f64,
    net_rx: f64,
    drop: f64,
    sq: f64,
) -> CpuDelta {
    CpuDelta {
        cpu: CpuId(id),
        pct: CpuPercent {
            usr,
            sys,
            irq,
            softirq: soft,
            steal: 0.0,
            iowait: 0.0,
            idle: 100.0 - usr - sys - irq - soft,
        },
        times: CpuTimes::default(),
        net_rx: net_rx as u64,
        net_tx: 0,
        net_rx_per_s: net_rx,
        net_tx_per_s: 0.0,
        softnet: None,
        softnet_per_s: Some(SoftnetRates {
            processed: net_rx * 4.0,
            dropped: drop,
            time_squeeze: sq,
            received_rps: Some(0.0),
            flow_limit: Some(0.0),
        }),
    }
}

fn iface(name: &str, rx_pps: f64, tx_pps: f64, drop: f64) -> IfaceDelta {
    IfaceDelta {
        name: name.into(),
        rx_packets: Packets(rx_pps as u64),
        tx_packets: Packets(tx_pps as u64),
        rx_bytes: Bytes(rx_pps as u64 * 64),
        tx_bytes: Bytes(tx_pps as u64 * 64),
        rx_drop: drop as u64,
        tx_drop: 0,
        rx_errs: 0,
        tx_errs: 0,
        rx_pps,
        tx_pps,
        rx_bps: rx_pps * 64.0 * 8.0,
        tx_bps: tx_pps * 64.0 * 8.0,
        rx_drop_per_s: drop,
        tx_drop_per_s: 0.0,
    }
}

/// IRQ `n` of `snap` firing `per_s` times a second on `cpus`.
fn irq(snap: &HostSnapshot, n: IrqNumber, per_s: u64, cpus: &[u32]) -> IrqDelta {
    let i = snap.irq(n).unwrap();
    let k = cpus.len().max(1) as u64;
    IrqDelta {
        irq: n,
        name: i.name.clone(),
        iface: i.interface.clone(),
        queue: i.queue,
        count: per_s,
        per_s: per_s as f64,
        per_cpu: cpus
            .iter()
            .map(|c| CpuCount {
                cpu: CpuId(*c),
                count: per_s / k,
            })
            .collect(),
    }
}

fn delta(at_s: u64, cpus: Vec<CpuDelta>, ifaces: Vec<IfaceDelta>, irqs: Vec<IrqDelta>) -> Delta {
    Delta {
        at: Nanos(at_s * SEC),
        elapsed: Nanos(SEC),
        cpus,
        ifaces,
        irqs,
        counters: Default::default(),
        notes: vec![],
        queues: vec![],
        nic_counters: Default::default(),
        resets: vec![],
    }
}

fn render(screen: &Screen, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(f, screen)).unwrap();
    t
}

fn build(snap: &HostSnapshot, d: Option<&Delta>, q: &QueueRates, view: View) -> Screen {
    Screen::build(
        &Inputs {
            snapshot: snap,
            delta: d,
            queue_pps: q,
            findings: &[],
            ifaces: &[],
        },
        view,
    )
}

/// c4.8xlarge (36 vCPUs, ixgbevf): seed 001's shape, one CPU at 59 %
/// softirq taking every interrupt of eth0's queues while the others idle.
fn busy_c4() -> (HostSnapshot, Delta) {
    let snap = fixture("c4-8xlarge");
    let mut cpus: Vec<CpuDelta> = (0..36)
        .map(|c| cpu(c, 2.0, 1.0, 0.0, 0.5, 10.0, 0.0, 0.0))
        .collect();
    cpus[3] = cpu(3, 6.0, 4.0, 1.5, 59.0, 41_000.0, 120.0, 35.0);
    cpus[7] = cpu(7, 38.0, 12.0, 0.0, 3.0, 200.0, 0.0, 0.0);
    let eth0 = snap.interface("eth0").unwrap();
    let irqs: Vec<IrqDelta> = eth0
        .irqs
        .iter()
        .enumerate()
        .map(|(k, n)| irq(&snap, *n, [38_000, 9_000, 300, 0][k.min(3)], &[3]))
        .filter(|i| i.count > 0)
        .collect();
    let d = delta(
        10,
        cpus,
        vec![
            iface("eth0", 212_000.0, 3_000.0, 40.0),
            iface("lo", 12.0, 12.0, 0.0),
        ],
        irqs,
    );
    (snap, d)
}

#[test]
fn busy_host_one_cpu_at_high_softirq() {
    let (snap, d) = busy_c4();
    let s = build(&snap, Some(&d), &QueueRates::new(), View::default());
    let t = render(&s, 120, 40);
    insta::assert_snapshot!("busy_c4_by_id", t.backend());
    // Sorted by softirq, cpu3 comes first and is marked as taking the IRQs.
    let s = build(
        &snap,
        Some(&d),
        &QueueRates::new(),
        View {
            sort: SortKey::Softirq,
            ..View::default()
        },
    );
    assert_eq!(s.cpus[0].cpu, CpuId(3));
    assert!(s.cpus[0].serves_nic);
    let t = render(&s, 120, 40);
    insta::assert_snapshot!("busy_c4_by_softirq", t.backend());
}

#[test]
fn heat_map_shades_the_busiest_queue_red() {
    let (snap, d) = busy_c4();
    let s = build(&snap, Some(&d), &QueueRates::new(), View::default());
    let nic = s.nic.as_ref().unwrap();
    let hot = nic.queues.iter().find(|q| q.heat == 1.0).unwrap();
    assert_eq!(heat_color(hot.heat), Color::Red);
    let t = render(&s, 120, 40);
    let buf = t.backend().buffer();
    // The row of the busiest queue: its rates are drawn in the hottest shade.
    let row = (0..40)
        .find(|y| {
            let line: String = (0..120).map(|x| buf[(x, *y)].symbol()).collect();
            line.contains(&format!(" {} ", hot.irq)) && line.contains("38.0k")
        })
        .unwrap();
    let x = (0..120).find(|x| buf[(*x, row)].symbol() == "█").unwrap();
    assert_eq!(buf[(x, row)].fg, Color::Red);
    assert_eq!(heat_color(0.0), Color::DarkGray);
    assert_eq!(heat_color(f64::NAN), Color::DarkGray);
}

/// Two NICs with queues: the mlx5 fixture with the ENA fixture's NIC added
/// (its IRQs renumbered past mlx5's), per-queue packet rates on the second.
fn two_nics() -> (HostSnapshot, Delta, QueueRates) {
    let mut snap = fixture("nic-mlx5");
    let ena = fixture("nic-ena");
    let mut ens5 = ena.interface("ens5").unwrap().clone();
    let shift = 1000;
    for n in &mut ens5.irqs {
        let mut i = ena.irq(*n).unwrap().clone();
        i.number = IrqNumber(n.0 + shift);
        snap.irqs.push(i);
        n.0 += shift;
    }
    snap.irqs.sort_by_key(|i| i.number);
    snap.interfaces.push(ens5.clone());
    let mlx = snap.interface("ens1f0np0").unwrap().clone();
    let mut irqs: Vec<IrqDelta> = mlx
        .irqs
        .iter()
        .take(4)
        .map(|n| irq(&snap, *n, 1_000 + u64::from(n.0 % 7) * 100, &[n.0 % 16]))
        .collect();
    let mut q = QueueRates::new();
    for (k, n) in ens5.irqs.iter().enumerate() {
        let i = irq(&snap, *n, 2_000 * (k as u64 + 1), &[k as u32 % 8]);
        if let Some(idx) = i.queue.and_then(|q| q.index) {
            q.insert(
                ("ens5".to_string(), QueueDir::Rx, idx),
                50_000.0 * (idx as f64 + 1.0),
            );
        }
        irqs.push(i);
    }
    irqs.sort_by_key(|i| i.irq);
    let cpus = (0..16)
        .map(|c| cpu(c, 10.0, 5.0, 1.0, 8.0, 3_000.0, 0.0, 0.0))
        .collect();
    let d = delta(
        20,
        cpus,
        vec![
            iface("ens1f0np0", 5_000.0, 4_000.0, 0.0),
            iface("ens5", 500_000.0, 20_000.0, 0.0),
        ],
        irqs,
    );
    (snap, d, q)
}

#[test]
fn two_nic_host_tabs_and_per_queue_packets() {
    let (snap, d, q) = two_nics();
    let s = build(&snap, Some(&d), &q, View::default());
    assert_eq!(&s.nics[..2], ["ens1f0np0", "ens5"]);
    insta::assert_snapshot!("two_nics_first", render(&s, 120, 40).backend());
    let s = build(
        &snap,
        Some(&d),
        &q,
        View {
            nic: 1,
            sort: SortKey::Busy,
            ..View::default()
        },
    );
    let nic = s.nic.as_ref().unwrap();
    assert_eq!(nic.name, "ens5");
    assert!(nic.heat_by_pps);
    // Busiest by packets/s first.
    let pps: Vec<f64> = nic.queues.iter().filter_map(|q| q.pps).collect();
    assert!(pps.windows(2).all(|w| w[0] >= w[1]), "{pps:?}");
    insta::assert_snapshot!("two_nics_second_by_pps", render(&s, 120, 40).backend());
}

fn kvm_delta(at_s: u64, soft0: f64) -> Delta {
    let snap = fixture("kvm-2vcpu-6.18");
    let eth0 = snap.interface("eth0").unwrap();
    let irqs = eth0
        .irqs
        .iter()
        .map(|n| irq(&snap, *n, 500 + at_s, &[1]))
        .collect();
    delta(
        at_s,
        vec![
            cpu(0, 20.0, 10.0, 0.0, soft0, 9_000.0, 0.0, 0.0),
            cpu(1, 5.0, 3.0, 0.5, 12.0, 2_000.0, 0.0, 0.0),
        ],
        vec![iface("eth0", 8_000.0 + at_s as f64, 7_000.0, 0.0)],
        irqs,
    )
}

fn key(app: &mut App, c: KeyCode) {
    app.key(KeyEvent::new(c, KeyModifiers::NONE));
}

#[test]
fn frozen_screen_keeps_its_data() {
    let snap = fixture("kvm-2vcpu-6.18");
    let mut app = App::new(Nanos(0), snap, vec![], Box::new(FixedFindings::default()));
    app.push(kvm_delta(1, 40.0));
    key(&mut app, KeyCode::Char('f'));
    app.push(kvm_delta(2, 80.0));
    let s = app.screen();
    assert!(s.view.frozen);
    assert_eq!(s.cpus[0].pct.softirq, 40.0, "frozen screen took new data");
    // Sorting still works on the frozen data.
    key(&mut app, KeyCode::Char('s'));
    let s = app.screen();
    assert_eq!(s.view.sort, SortKey::Softirq);
    insta::assert_snapshot!("kvm_frozen", render(&s, 100, 24).backend());
    key(&mut app, KeyCode::Char(' '));
    assert_eq!(app.screen().cpus[0].pct.softirq, 80.0);
}

#[test]
fn help_overlay() {
    let snap = fixture("kvm-2vcpu-6.18");
    let d = kvm_delta(1, 40.0);
    let s = build(
        &snap,
        Some(&d),
        &QueueRates::new(),
        View {
            help: true,
            ..View::default()
        },
    );
    insta::assert_snapshot!("kvm_help", render(&s, 100, 30).backend());
}

#[test]
fn waiting_for_the_first_interval() {
    let snap = fixture("kvm-2vcpu-6.18");
    let s = build(&snap, None, &QueueRates::new(), View::default());
    let t = render(&s, 80, 20);
    insta::assert_snapshot!("kvm_waiting", t.backend());
}

#[test]
fn too_small_terminal_gets_a_message() {
    let (snap, d) = busy_c4();
    let s = build(&snap, Some(&d), &QueueRates::new(), View::default());
    for (w, h) in [(79, 40), (120, 19), (40, 10)] {
        let t = render(&s, w, h);
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(text.contains("too small"), "{w}x{h}: {text}");
        assert!(!text.contains("┌"), "{w}x{h} drew panels");
    }
    insta::assert_snapshot!("too_small_60x12", render(&s, 60, 12).backend());
}

fn finding(level: Level, id: &str, subject: &str, title: &str) -> TopFinding {
    TopFinding {
        level,
        id: id.into(),
        subject: subject.into(),
        title: title.into(),
    }
}

#[test]
fn findings_panel_shows_age_and_cleared() {
    let (snap, d) = busy_c4();
    let mut board = Board::default();
    let concentrated = finding(
        Level::Critical,
        "softirq-concentrated",
        "cpu3",
        "NET_RX softirq 59% on cpu3 while 35 CPUs idle; eth0's queue IRQs all on cpu3",
    );
    let drops = finding(
        Level::Warning,
        "softnet-drops",
        "cpu3",
        "120 backlog drops/s, 35 time_squeeze/s on cpu3",
    );
    let rps = finding(
        Level::Info,
        "rps-off",
        "eth0",
        "2 RX queues for 36 CPUs and RPS off",
    );
    board.update(Nanos(5 * SEC), vec![rps.clone(), drops.clone()]);
    board.update(Nanos(9 * SEC), vec![concentrated, rps]);
    let rows = board.rows();
    let s = Screen::build(
        &Inputs {
            snapshot: &snap,
            delta: Some(&d),
            queue_pps: &QueueRates::new(),
            findings: &rows,
            ifaces: &[],
        },
        View::default(),
    );
    insta::assert_snapshot!("busy_c4_findings", render(&s, 120, 40).backend());
}

#[test]
fn iface_filter_limits_the_tabs() {
    let (snap, d, q) = two_nics();
    let only = vec!["ens5".to_string()];
    let s = Screen::build(
        &Inputs {
            snapshot: &snap,
            delta: Some(&d),
            queue_pps: &q,
            findings: &[],
            ifaces: &only,
        },
        View {
            nic: 3,
            ..View::default()
        },
    );
    assert_eq!(s.nics, ["ens5"]);
    assert_eq!(s.selected, 0, "a stale NIC index is clamped");
    assert_eq!(s.nic.unwrap().name, "ens5");
}

#[test]
fn queue_deltas_reach_the_queue_rows() {
    let snap = fixture("kvm-2vcpu-6.18");
    let mut app = App::new(Nanos(0), snap, vec![], Box::new(FixedFindings::default()));
    let mut d = kvm_delta(1, 10.0);
    for (dir, pps) in [(QueueDir::Rx, 8_000.0), (QueueDir::Tx, 7_000.0)] {
        d.queues.push(host::sampler::QueueDelta {
            iface: "eth0".into(),
            dir,
            index: 0,
            packets: Some(pps as u64),
            drops: None,
            packets_per_s: Some(pps),
            drops_per_s: None,
            irq: None,
            interrupts: None,
            packets_per_interrupt: None,
        });
    }
    app.push(d);
    let s = app.screen();
    let nic = s.nic.unwrap();
    assert!(nic.heat_by_pps);
    let pps = |label: &str| nic.queues.iter().find(|q| q.queue == label).unwrap().pps;
    assert_eq!(pps("rx-0"), Some(8_000.0));
    assert_eq!(pps("tx-0"), Some(7_000.0));
    assert_eq!(pps("other"), None);
}

#[test]
fn panel_heights_fill_the_terminal() {
    let (snap, d) = busy_c4();
    let (snap2, d2, q2) = two_nics();
    let screens = [
        build(&snap, Some(&d), &QueueRates::new(), View::default()),
        build(&snap2, Some(&d2), &q2, View::default()),
        build(&snap, None, &QueueRates::new(), View::default()),
    ];
    for s in &screens {
        for h in nettune::top::draw::MIN_HEIGHT..=120 {
            let (c, n, f) = nettune::top::draw::heights(s, h);
            assert_eq!(c + n + f, h - 3, "h={h}: {c}+{n}+{f}");
            assert!(c >= 4 && n >= 3 && f >= 3, "h={h}: {c}+{n}+{f}");
        }
    }
}

/// A capture's recorded samples replayed through the app, as `top --root`
/// does: ENA at 400k pps, 100k per queue (tests/fixtures/nic-ena-allowance).
#[test]
fn replay_of_a_capture() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nic-ena-allowance");
    let root = host::Root::new(&dir);
    let samples = host::capture::read_samples(&root).unwrap();
    assert_eq!(samples.len(), 3);
    let snap = host::read_snapshot(&root);
    let mut app = App::new(
        samples[0].at,
        snap,
        vec![],
        Box::new(nettune::top::findings::DoctorFindings::new(root.clone())),
    );
    let total = samples.len() - 1;
    app.replay = Some((0, total));
    for (k, s) in samples.into_iter().enumerate() {
        app.sample(s);
        if k > 0 {
            app.replay = Some((k, total));
        }
    }
    let s = app.screen();
    let nic = s.nic.as_ref().unwrap();
    assert_eq!(nic.name, "ens5");
    assert!(nic.heat_by_pps);
    assert!(
        nic.queues.iter().any(|q| q.pps == Some(100_000.0)),
        "{:?}",
        nic.queues
    );
    insta::assert_snapshot!("replay_nic_ena_allowance", render(&s, 120, 40).backend());
}

/// One frame of a host with 32768 CPUs, every queue IRQ of eth0 firing on
/// all of them, and 200k interfaces in `/proc/net/dev`: the old screen
/// compared every CPU row with every serving CPU of every queue (4 × 32768²)
/// and every interface name with every earlier one (200k²), minutes to
/// hours; the frame is linear now. The bound only catches the quadratic
/// code, a busy machine passes it.
#[test]
fn a_frame_is_linear_in_cpus_and_interfaces() {
    let snap = fixture("c4-8xlarge");
    let n_cpus = 32_768u32;
    let all: Vec<u32> = (0..n_cpus).collect();
    let cpus: Vec<CpuDelta> = all
        .iter()
        .map(|c| cpu(*c, 2.0, 1.0, 0.0, 0.5, 10.0, 0.0, 0.0))
        .collect();
    let eth0 = snap.interface("eth0").unwrap();
    let irqs: Vec<IrqDelta> = eth0
        .irqs
        .iter()
        .map(|n| irq(&snap, *n, u64::from(n_cpus) * 10, &all))
        .collect();
    let ifaces: Vec<IfaceDelta> = (0..200_000)
        .map(|k| iface(&format!("veth{k}"), 1.0, 1.0, 0.0))
        .collect();
    let d = delta(10, cpus, ifaces, irqs);
    let t = std::time::Instant::now();
    let s = build(&snap, Some(&d), &QueueRates::new(), View::default());
    let took = t.elapsed();
    assert_eq!(s.cpus.len(), n_cpus as usize);
    assert!(s.cpus.iter().all(|r| r.serves_nic));
    assert!(s.nics.len() >= 200_000);
    let t = render(&s, 120, 40);
    assert!(!t.backend().buffer().content().is_empty());
    assert!(
        took < std::time::Duration::from_secs(60),
        "one frame took {took:?}"
    );
}

/// The drops pane: the last interval's drops per second with the largest
/// reasons, and the one line when the watcher is off.
#[test]
fn the_drops_pane_shows_the_largest_reasons_or_why_it_is_off() {
    use model::drops::{DropCounts, DropInterval};
    use nettune::top::drops::DropsPane;
    let (snap, d) = busy_c4();
    let mut s = build(&snap, Some(&d), &QueueRates::new(), View::default());
    let mut cur = DropCounts::new();
    for (reason, n) in [
        ("NO_SOCKET", 1200),
        ("QDISC_DROP", 300),
        ("TCP_RESET", 20),
        ("NOMEM", 1),
    ] {
        for _ in 0..n {
            cur.add_sample(reason, "x+0x1", Some(0x0800));
        }
    }
    cur.total = 1521;
    s.drops = DropsPane::of(&DropInterval::between(&DropCounts::new(), &cur, 1.0));
    assert_eq!(
        s.drops.line(),
        "Drops by reason: 1.52k/s  NO_SOCKET 1.20k/s, QDISC_DROP 300/s, TCP_RESET 20.0/s, 1 more"
    );
    insta::assert_snapshot!("drops_pane_seen", render(&s, 120, 40).backend());
    s.drops = DropsPane::Off(model::drops::Unavailable::NoTracefs.to_string());
    let t = render(&s, 120, 40);
    let text = format!("{}", t.backend());
    assert!(
        text.contains("Drops by reason: off (tracefs is not mounted at /sys/kernel/tracing"),
        "{text}"
    );
}
