//! The state of `nettune top` between frames, without I/O: the host
//! snapshot, the last deltas (the window the findings look at), the findings
//! board, the view, and the data frozen on screen. The event loop in
//! `cmd::top` feeds it deltas and keys and draws [`App::screen`].

use super::drops::DropsPane;
use super::findings::{Board, BoardRow, FindingSource, Window};
use super::keys::{Action, View};
use super::screen::{nic_names, queue_rates, Inputs, QueueRates, Screen};
use host::sampler::{Delta, Sample};
use model::snapshot::HostSnapshot;
use ratatui::crossterm::event::KeyEvent;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many intervals the findings see (the last N deltas, between the
/// last N + 1 samples).
pub const WINDOW: usize = 5;

/// What one screen shows; copied aside when the screen is frozen.
#[derive(Debug, Clone)]
struct Shown {
    snapshot: Arc<HostSnapshot>,
    delta: Option<Delta>,
    queue_pps: QueueRates,
    findings: Vec<BoardRow>,
    drops: DropsPane,
}

/// `nettune top`'s state.
#[derive(Debug)]
pub struct App {
    /// What the user chose.
    pub view: View,
    /// Replaying a capture: intervals fed so far and in all (shown in the title).
    pub replay: Option<(usize, usize)>,
    live: Shown,
    frozen: Option<Shown>,
    window: VecDeque<Delta>,
    samples: VecDeque<Sample>,
    board: Board,
    source: Box<dyn FindingSource>,
    ifaces: Vec<String>,
}

impl App {
    /// Start at monotonic time `now` on `snapshot`, showing only `ifaces`
    /// (all when empty), with findings from `source`.
    pub fn new(
        now: model::Nanos,
        snapshot: HostSnapshot,
        ifaces: Vec<String>,
        source: Box<dyn FindingSource>,
    ) -> App {
        let mut app = App {
            view: View::default(),
            replay: None,
            live: Shown {
                snapshot: Arc::new(snapshot),
                delta: None,
                queue_pps: QueueRates::new(),
                findings: Vec::new(),
                drops: DropsPane::default(),
            },
            frozen: None,
            window: VecDeque::with_capacity(WINDOW),
            samples: VecDeque::with_capacity(WINDOW + 1),
            board: Board::default(),
            source,
            ifaces,
        };
        app.refresh_findings(now);
        app
    }

    fn refresh_findings(&mut self, now: model::Nanos) {
        let deltas = self.window.make_contiguous();
        let samples = self.samples.make_contiguous();
        let current = self
            .source
            .findings(&self.live.snapshot, Window { samples, deltas });
        self.board.update(now, current);
        self.live.findings = self.board.rows();
    }

    /// A new sample from the live sampler: the interval from the previous
    /// one is [`push`](App::push)ed (the first sample only starts the window).
    pub fn sample(&mut self, s: Sample) {
        let delta = self.samples.back().map(|prev| s.delta(prev));
        if self.samples.len() > WINDOW {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
        if let Some(d) = delta {
            self.push(d);
        }
    }

    /// A new interval: it becomes the live delta (with its per-queue packet
    /// rates) and joins the window; the findings run on the window.
    pub fn push(&mut self, delta: Delta) {
        let now = delta.at;
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(delta.clone());
        self.live.queue_pps = queue_rates(&delta);
        self.live.delta = Some(delta);
        self.refresh_findings(now);
    }

    /// A newer snapshot (IRQ affinities and queues change under irqbalance
    /// or `nettune apply`).
    pub fn set_snapshot(&mut self, s: HostSnapshot) {
        self.live.snapshot = Arc::new(s);
    }

    /// What the drops pane shows from now on (the last interval's drops,
    /// or why the watcher is off).
    pub fn set_drops(&mut self, d: DropsPane) {
        self.live.drops = d;
    }

    /// The deltas the findings see, oldest first.
    pub fn window(&self) -> impl Iterator<Item = &Delta> {
        self.window.iter()
    }

    fn shown(&self) -> &Shown {
        self.frozen.as_ref().unwrap_or(&self.live)
    }

    /// How many NICs the tab bar has now.
    pub fn nic_count(&self) -> usize {
        let s = self.shown();
        nic_names(&s.snapshot, s.delta.as_ref(), &self.ifaces).len()
    }

    /// Apply a key. Freezing keeps a copy of what is on screen; sorting and
    /// picking a NIC still work on the frozen copy.
    pub fn key(&mut self, k: KeyEvent) -> Action {
        let nics = self.nic_count();
        let a = self.view.on_key(k, nics);
        match (self.view.frozen, self.frozen.is_some()) {
            (true, false) => self.frozen = Some(self.live.clone()),
            (false, true) => self.frozen = None,
            _ => {}
        }
        a
    }

    /// The screen to draw now.
    pub fn screen(&self) -> Screen {
        let s = self.shown();
        let mut screen = Screen::build(
            &Inputs {
                snapshot: &s.snapshot,
                delta: s.delta.as_ref(),
                queue_pps: &s.queue_pps,
                findings: &s.findings,
                ifaces: &self.ifaces,
            },
            self.view,
        );
        screen.replay = self.replay;
        screen.drops = s.drops.clone();
        screen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top::findings::{Level, TopFinding};
    use host::sampler::Sampler;
    use host::Root;
    use std::path::Path;
    use std::sync::Mutex;

    /// Counts what the source was given; fires one finding per sample held.
    #[derive(Debug, Default)]
    struct Spy(Arc<Mutex<Vec<(usize, usize)>>>);

    impl FindingSource for Spy {
        fn findings(&mut self, _: &HostSnapshot, w: Window<'_>) -> Vec<TopFinding> {
            if let Ok(mut v) = self.0.lock() {
                v.push((w.samples.len(), w.deltas.len()));
            }
            vec![TopFinding {
                level: Level::Info,
                id: "spy".into(),
                subject: format!("{}", w.samples.len()),
                title: String::new(),
            }]
        }
    }

    fn recorded(set: &str, at_s: u64) -> Sample {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../host/src/sampler/testdata/kvm-6.18-iperf3")
            .join(set);
        let mut s = Sampler::new(Root::new(dir)).sample().unwrap();
        s.at = model::Nanos(at_s * 1_000_000_000);
        s
    }

    #[test]
    fn samples_make_deltas_and_a_bounded_window() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut app = App::new(
            model::Nanos(0),
            host::read_snapshot(&Root::new(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/kvm-2vcpu-6.18"),
            )),
            vec![],
            Box::new(Spy(seen.clone())),
        );
        app.sample(recorded("a", 1));
        assert!(
            app.screen().elapsed_s.is_none(),
            "one sample is no interval"
        );
        for k in 0..8u64 {
            let set = if k % 2 == 0 { "b" } else { "a" };
            app.sample(recorded(set, 2 + k));
        }
        let s = app.screen();
        assert_eq!(s.elapsed_s, Some(1.0));
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(app.window().count(), WINDOW);
        let seen = seen.lock().unwrap().clone();
        // At start (nothing), then one call per interval with the window growing
        // to WINDOW deltas between WINDOW + 1 samples.
        assert_eq!(seen.first(), Some(&(0, 0)));
        assert_eq!(seen.get(1), Some(&(2, 1)));
        assert_eq!(seen.last(), Some(&(WINDOW + 1, WINDOW)));
        assert_eq!(seen.len(), 9);
        // The finding that changed subject each interval: one active row.
        assert_eq!(s.findings.iter().filter(|r| !r.cleared).count(), 1);
    }
}
