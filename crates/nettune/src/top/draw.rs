//! Drawing: functions that take a [`Screen`] and a ratatui [`Frame`]. No
//! state and no I/O; every number comes from the screen model.

use super::findings::{BoardRow, Level};
use super::screen::{CpuRow, NicView, QueueRow, Screen};
use crate::rates::{opt_per_sec, opt_pps};
use model::metric::{fmt_bits, fmt_per_sec, fmt_pps};
use model::text::{printable, Printable};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// Smallest terminal drawn; below it a message says so.
pub const MIN_WIDTH: u16 = 80;
/// Smallest terminal height drawn.
pub const MIN_HEIGHT: u16 = 20;

/// Width of everything on a CPU line but the bar.
const CPU_FIXED: u16 = 7 + 2 + 6 * 6 + 9 + 10 + 10;
/// Width of everything on a queue line but the heat bar.
const QUEUE_FIXED: u16 = 8 + 1 + 5 + 1 + 10 + 1 + 9 + 1 + 9 + 2;

/// Draw `s` on the whole frame.
pub fn draw(f: &mut Frame<'_>, s: &Screen) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        draw_too_small(f, area);
        return;
    }
    let (cpu_h, nic_h, find_h) = heights(s, area.height);
    let [title, cpus, nic, drops, findings, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(cpu_h),
        Constraint::Length(nic_h),
        Constraint::Length(1),
        Constraint::Length(find_h),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_title(f, title, s);
    draw_cpus(f, cpus, s);
    draw_nic(f, nic, s);
    draw_drops(f, drops, s);
    draw_findings(f, findings, &s.findings);
    draw_footer(f, footer);
    if s.view.help {
        draw_help(f, area);
    }
}

/// Heights of the CPU, NIC and findings panels for a terminal `h` rows high
/// (at least [`MIN_HEIGHT`]): each gets what it needs when there is room,
/// and the findings panel takes what is left over.
pub fn heights(s: &Screen, h: u16) -> (u16, u16, u16) {
    // title, drops pane and footer: one row each
    let avail = h.saturating_sub(3);
    let clamp16 = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    let find_want = clamp16(s.findings.len().saturating_add(2)).clamp(3, 12);
    let cpu_want = clamp16(s.cpus.len().saturating_add(3)).max(4);
    let queues = s.nic.as_ref().map_or(0, |n| n.queues.len());
    let nic_want = clamp16(queues.saturating_add(5)).max(6);
    let mut find_h = find_want.min((avail / 4).max(3));
    let rest = avail.saturating_sub(find_h);
    let (cpu_h, nic_h);
    if cpu_want.saturating_add(nic_want) <= rest {
        // Spare rows go to the findings panel, so findings that appear
        // later do not move the other panels.
        cpu_h = cpu_want;
        nic_h = nic_want;
        find_h = avail.saturating_sub(cpu_h + nic_h);
    } else {
        cpu_h = cpu_want
            .min((rest / 2).max(rest.saturating_sub(nic_want)))
            .max(4);
        nic_h = rest.saturating_sub(cpu_h);
    }
    (cpu_h, nic_h, find_h)
}

/// The drops pane: one line, dim when the watcher is off.
fn draw_drops(f: &mut Frame<'_>, area: Rect, s: &Screen) {
    let style = match s.drops {
        super::drops::DropsPane::Seen { .. } => Style::default(),
        _ => Style::default().fg(Color::DarkGray),
    };
    let text = model::text::printable_capped(&s.drops.line(), usize::from(area.width));
    f.render_widget(Paragraph::new(Line::styled(text, style)), area);
}

fn draw_too_small(f: &mut Frame<'_>, area: Rect) {
    let text = format!(
        "terminal {}x{} is too small for nettune top (needs {}x{}): enlarge it, press q to quit, or use `nettune stat`",
        area.width, area.height, MIN_WIDTH, MIN_HEIGHT
    );
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .style(Style::new().fg(Color::Yellow)),
        area,
    );
}

fn draw_title(f: &mut Frame<'_>, area: Rect, s: &Screen) {
    let every = s
        .elapsed_s
        .map_or_else(|| "waiting".into(), |e| format!("{e:.2} s"));
    let mut spans = vec![
        Span::styled(" nettune top ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!(
            "│ {} │ {} │ interval {} │ sort: {} ",
            Printable(&s.host),
            Printable(&s.kernel),
            every,
            s.view.sort.label()
        )),
    ];
    if let Some((at, of)) = s.replay {
        let text = if at >= of {
            format!(" REPLAY {at}/{of}, end ")
        } else {
            format!(" REPLAY {at}/{of} ")
        };
        spans.push(Span::styled(
            text,
            Style::new()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
        ));
    }
    if s.view.frozen {
        spans.push(Span::styled(
            " FROZEN ",
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_footer(f: &mut Frame<'_>, area: Rect) {
    let key = Style::new().add_modifier(Modifier::BOLD);
    let mut spans = Vec::new();
    for (k, what) in [
        ("q", "quit"),
        ("s", "sort"),
        ("tab/1-9", "NIC"),
        ("f", "freeze"),
        ("?", "help"),
    ] {
        spans.push(Span::styled(format!(" {k}"), key));
        spans.push(Span::raw(format!(" {what} ")));
    }
    f.render_widget(
        Paragraph::new(Line::from(spans)).style(Style::new().fg(Color::Gray)),
        area,
    );
}

/// The parts of a CPU bar: letter, colour, percent.
fn bar_parts(c: &CpuRow) -> [(char, Color, f64); 5] {
    [
        ('u', Color::Green, c.pct.usr),
        ('s', Color::Blue, c.pct.sys),
        ('i', Color::Magenta, c.pct.irq),
        ('S', Color::Red, c.pct.softirq),
        ('t', Color::Yellow, c.pct.steal),
    ]
}

/// A stacked bar `width` cells wide: cumulative shares rounded to cells, so
/// the parts add up to the whole; the rest (idle, iowait) is blank.
pub fn cpu_bar(c: &CpuRow, width: u16) -> Vec<Span<'static>> {
    let w = f64::from(width);
    let mut spans = Vec::new();
    let mut cum = 0.0;
    let mut used: u16 = 0;
    for (ch, color, pct) in bar_parts(c) {
        cum += if pct.is_finite() { pct.max(0.0) } else { 0.0 };
        let end = ((cum.min(100.0) / 100.0) * w).round() as u16;
        let end = end.min(width);
        let n = end.saturating_sub(used);
        if n > 0 {
            spans.push(Span::styled(
                ch.to_string().repeat(usize::from(n)),
                Style::new().fg(color).add_modifier(Modifier::BOLD),
            ));
            used = end;
        }
    }
    if used < width {
        spans.push(Span::raw(" ".repeat(usize::from(width - used))));
    }
    spans
}

fn draw_cpus(f: &mut Frame<'_>, area: Rect, s: &Screen) {
    let block = Block::bordered()
        .title(" CPUs  (u usr  s sys  i irq  S softirq  t steal; * takes the NIC's IRQs) ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    if s.elapsed_s.is_none() {
        f.render_widget(Paragraph::new("waiting for the first interval..."), inner);
        return;
    }
    let bar_w = inner.width.saturating_sub(CPU_FIXED).max(4);
    let mut lines = vec![Line::styled(
        format!(
            "{:<7}[{:<bw$}]{:>6}{:>6}{:>6}{:>6}{:>6}{:>6}{:>9}{:>10}{:>10}",
            "CPU",
            "",
            "%usr",
            "%sys",
            "%irq",
            "%soft",
            "%stl",
            "%idle",
            "NET_RX/s",
            "drop/s",
            "squeeze/s",
            bw = usize::from(bar_w)
        ),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    let room = usize::from(inner.height.saturating_sub(1));
    let (shown, more) = if s.cpus.len() > room {
        (
            room.saturating_sub(1),
            s.cpus.len() - room.saturating_sub(1),
        )
    } else {
        (s.cpus.len(), 0)
    };
    for c in s.cpus.iter().take(shown) {
        let mark = if c.serves_nic { "*" } else { "" };
        let mut spans = vec![
            Span::raw(format!("{:<7}", format!("{}{mark}", c.cpu))),
            "[".into(),
        ];
        spans.extend(cpu_bar(c, bar_w));
        spans.push("]".into());
        let p = &c.pct;
        spans.push(Span::raw(format!(
            "{:>6.1}{:>6.1}{:>6.1}",
            p.usr, p.sys, p.irq
        )));
        let soft = format!("{:>6.1}", p.softirq);
        spans.push(if p.softirq >= 50.0 {
            Span::styled(
                soft,
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            )
        } else {
            Span::raw(soft)
        });
        spans.push(Span::raw(format!(
            "{:>6.1}{:>6.1}{:>9}",
            p.steal,
            p.idle,
            fmt_per_sec(c.net_rx_per_s)
        )));
        let trouble = |v: Option<f64>, text: fn(Option<f64>) -> String, w: usize| {
            let t = format!("{:>w$}", text(v));
            if v.is_some_and(|v| v > 0.0) {
                Span::styled(t, Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))
            } else {
                Span::raw(t)
            }
        };
        spans.push(trouble(c.dropped_per_s, opt_pps, 10));
        spans.push(trouble(c.squeeze_per_s, opt_per_sec, 10));
        lines.push(Line::from(spans));
    }
    if more > 0 {
        lines.push(Line::styled(
            format!("  +{more} more CPUs (s sorts the busiest to the top)"),
            Style::new().fg(Color::DarkGray),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// The heat-map shade of a share of the busiest queue.
pub fn heat_color(h: f64) -> Color {
    if h.is_nan() || h <= 0.0 {
        Color::DarkGray
    } else if h < 0.25 {
        Color::Blue
    } else if h < 0.5 {
        Color::Cyan
    } else if h < 0.75 {
        Color::Yellow
    } else {
        Color::Red
    }
}

fn queue_cpus(q: &QueueRow) -> String {
    if q.cpus.is_empty() {
        return "-".into();
    }
    let mut s = String::new();
    if q.cpus_from_affinity {
        let set: model::CpuSet = q.cpus.iter().copied().collect();
        s = format!("({})", set.to_list());
    } else {
        let list: Vec<String> = q.cpus.iter().take(3).map(u32::to_string).collect();
        s.push_str(&list.join(","));
        if q.cpus.len() > 3 {
            s.push('+');
        }
    }
    if s.chars().count() > 10 {
        s = s.chars().take(9).collect::<String>() + "…";
    }
    s
}

fn nic_summary(n: &NicView) -> Line<'static> {
    let mut head = printable(&n.name).into_owned();
    if let Some(d) = &n.driver {
        head.push_str(&format!("  {}", Printable(d)));
    }
    if let Some(node) = n.numa_node.filter(|n| *n >= 0) {
        head.push_str(&format!("  node {node}"));
    }
    if let Some(sp) = n.speed_mbps {
        head.push_str(&format!("  {sp} Mb/s"));
    }
    // Unknown before the second sample: the units still say which is which.
    let pps = |v: Option<f64>| v.map_or_else(|| "- pps".into(), fmt_pps);
    let bits = |v: Option<f64>| v.map_or_else(|| "- bit/s".into(), fmt_bits);
    let mut spans = vec![
        Span::styled(head, Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!(
            "   rx {} {}   tx {} {}   rx drops ",
            pps(n.rx_pps),
            bits(n.rx_bps),
            pps(n.tx_pps),
            bits(n.tx_bps),
        )),
    ];
    let drop = pps(n.rx_drop_per_s);
    spans.push(if n.rx_drop_per_s.is_some_and(|d| d > 0.0) {
        Span::styled(
            drop,
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        )
    } else {
        Span::raw(drop)
    });
    Line::from(spans)
}

fn draw_nic(f: &mut Frame<'_>, area: Rect, s: &Screen) {
    let block = Block::bordered().title(" NIC queues ");
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(n) = &s.nic else {
        f.render_widget(Paragraph::new("no network interface to show"), inner);
        return;
    };
    let mut tabs = Vec::new();
    for (i, name) in s.nics.iter().enumerate() {
        let label = if i < 9 {
            format!("{} {}", i + 1, Printable(name))
        } else {
            printable(name).into_owned()
        };
        if i == s.selected {
            tabs.push(Span::styled(
                format!("[{label}]"),
                Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            ));
        } else {
            tabs.push(Span::raw(format!(" {label} ")));
        }
        tabs.push(Span::raw(" "));
    }
    let mut lines = vec![Line::from(tabs), nic_summary(n)];
    if n.queues.is_empty() {
        lines.push(Line::styled(
            "no queue IRQs (a virtual or software interface); the totals above are all there is",
            Style::new().fg(Color::DarkGray),
        ));
        f.render_widget(Paragraph::new(lines), inner);
        return;
    }
    let bar_w = inner.width.saturating_sub(QUEUE_FIXED).max(4);
    let by = if n.heat_by_pps {
        "heat: pps"
    } else {
        "heat: irq/s (per-queue pps not known)"
    };
    lines.push(Line::styled(
        format!(
            "{:<8} {:>5} {:<10} {:>9} {:>9}  {}",
            "queue", "IRQ", "CPU", "irq/s", "pps", by
        ),
        Style::new().add_modifier(Modifier::BOLD),
    ));
    let room = usize::from(inner.height.saturating_sub(3));
    let (shown, more) = if n.queues.len() > room {
        (
            room.saturating_sub(1),
            n.queues.len() - room.saturating_sub(1),
        )
    } else {
        (n.queues.len(), 0)
    };
    for q in n.queues.iter().take(shown) {
        let color = heat_color(q.heat);
        let cells = ((q.heat * f64::from(bar_w)).round() as u16).min(bar_w);
        let cells = if q.heat > 0.0 { cells.max(1) } else { 0 };
        lines.push(Line::from(vec![
            Span::raw(format!(
                "{:<8} {:>5} {:<10} ",
                q.queue,
                q.irq,
                queue_cpus(q)
            )),
            Span::styled(
                format!("{:>9} {:>9}", fmt_per_sec(q.irq_per_s), opt_pps(q.pps)),
                Style::new().fg(color),
            ),
            Span::raw("  "),
            Span::styled("█".repeat(usize::from(cells)), Style::new().fg(color)),
        ]));
    }
    if more > 0 {
        lines.push(Line::styled(
            format!("  +{more} more queues (s sorts the busiest to the top)"),
            Style::new().fg(Color::DarkGray),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

fn level_style(l: Level) -> Style {
    match l {
        Level::Critical => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        Level::Warning => Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        Level::Info => Style::new().fg(Color::Cyan),
    }
}

fn draw_findings(f: &mut Frame<'_>, area: Rect, rows: &[BoardRow]) {
    let active = rows.iter().filter(|r| !r.cleared).count();
    let block = Block::bordered().title(format!(" Findings ({active}) "));
    let inner = block.inner(area);
    f.render_widget(block, area);
    if rows.is_empty() {
        f.render_widget(
            Paragraph::new(Line::styled("no findings", Style::new().fg(Color::Green))),
            inner,
        );
        return;
    }
    let room = usize::from(inner.height);
    let (shown, more) = if rows.len() > room {
        (room.saturating_sub(1), rows.len() - room.saturating_sub(1))
    } else {
        (rows.len(), 0)
    };
    let mut lines = Vec::new();
    for r in rows.iter().take(shown) {
        let fd = &r.finding;
        if r.cleared {
            lines.push(Line::styled(
                format!(
                    "ok   {:<22} {:<10} cleared {}s ago: {}",
                    Printable(&fd.id),
                    Printable(&fd.subject),
                    r.age_s,
                    Printable(&fd.title)
                ),
                Style::new().fg(Color::DarkGray),
            ));
        } else {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<4} ", fd.level.tag()), level_style(fd.level)),
                Span::raw(format!(
                    "{:<22} {:<10} {:>5} {}",
                    Printable(&fd.id),
                    Printable(&fd.subject),
                    format!("{}s", r.age_s),
                    Printable(&fd.title)
                )),
            ]));
        }
    }
    if more > 0 {
        lines.push(Line::styled(
            format!("  +{more} more (nettune doctor lists them all)"),
            Style::new().fg(Color::DarkGray),
        ));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// The help overlay's text.
pub const HELP: &[&str] = &[
    "q  Esc  Ctrl-C   quit (Esc first closes this help)",
    "s                cycle the sort: id → softirq → busy",
    "                 (queues: IRQ → irq/s → pps)",
    "tab  shift-tab   next / previous NIC (also → and ←)",
    "1-9              pick a NIC by its number",
    "f  space         freeze / unfreeze the screen",
    "?  h             this help",
    "",
    "CPU bar: u usr  s sys  i irq  S softirq  t steal, blank idle",
    "* after a CPU: it took interrupts of the shown NIC's queues",
    "CPU of a queue: CPUs that took its interrupts, busiest first;",
    "  (0-3) in brackets: its affinity, when it did not fire",
    "heat: the queue's share of the busiest queue",
    "drop/s, squeeze/s: /proc/net/softnet_stat per CPU",
];

fn draw_help(f: &mut Frame<'_>, area: Rect) {
    let w = 64.min(area.width);
    let h = u16::try_from(HELP.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    f.render_widget(Clear, r);
    let lines: Vec<Line<'_>> = HELP.iter().map(|l| Line::raw(*l)).collect();
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" help: nettune top ")),
        r,
    );
}
