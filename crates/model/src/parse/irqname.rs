//! What an IRQ's name says about its device and queue, and how an
//! interface's IRQs map to its queues ([`map_queues`]).
//!
//! Naming schemes, with the driver source they were checked against (the
//! `snprintf`/`request_irq` of the vector's name; "checked" means the format
//! string was read in the driver's source, "from memory" that it was not
//! found in time and is written as commonly seen in `/proc/interrupts`;
//! "dump: X" names the real dump under tests/fixtures/real-interrupts/X
//! that exercises it):
//!
//! | driver | queue vectors | not queues |
//! |---|---|---|
//! | ixgbe, ixgbevf, igb, fm10k | `eth0-TxRx-0`, `eth0-rx-0`, `eth0-tx-0` (checked: `"%s-TxRx-%u"`, `"%s-rx-%u"`, `"%s-tx-%u"`) | `eth0` (other/link or mailbox vector, named `netdev->name`; checked for igb). Dumps: igb-split-rx-tx, intel-txrx-plus-rx (TxRx-0 then rx-1..3 with one TX queue), ixgbevf-ec2-single-queue |
//! | igc | `eth0-TxRx-0` (from memory, same code as igb), queue pairs off `eth0-rx-0`, `eth0-tx-0` (dump: igc-queue-pairs-off) | `eth0` |
//! | i40e, ice, iavf | `i40e-eth0-TxRx-0`, `ice-eth0-TxRx-0`, `iavf-eth0-TxRx-0` (checked for i40e: `"%s-%s-%d", basename, "TxRx"`); ice >= 1.16 out of tree `ice-eth0-TxRx-A-B` for a vector with several queue pairs (checked: RX queues A to B, `"%s-%s-%u-%u"`; queue A with [`IrqName::last`] B) | `i40e-0000:81:00.0:misc`, `ice-0000:..:misc`, `ice-..:ll_ts` (checked: `"%s-%s:misc"`), `iavf-0000:..:mbx`, flow director `i40e-0000:01:00.0:fdir-TxRx-0` and ice control `ice-0000:65:00.0:ctrl-TxRx-0` (real dumps; any sideband word before the queue word makes a non-queue vector). Dump: iavf-mbx-irq-names |
//! | mlx4 | `mlx4-1@0000:04:00.0` (checked: `"mlx4-%d@%s"`; vector 0 is async, so comp vector N serves ring N-1), `eth0-0` once renamed by mlx4_en (from memory) | `mlx4-async@pci:...` (dump: mlx4-azure-vf) |
//! | mlx5 | `mlx5_comp0@pci:0000:...` (checked: `"mlx5_comp%d"`; comp vector N serves channel N, and vectors stay after `ethtool -L`, see [`retain_existing`]) | `mlx5_async0` (dump: mlx5-cx5-dual-port), `mlx5_pages_eq`, `mlx5_cmd_eq`, `mlx5_async_eq` (RHEL 7 era, dump: mlx5-azure-el7-eq-names), `mlx5_ctrl0` |
//! | bnxt | `eth0-TxRx-0`, `eth0-rx-0`, `eth0-tx-0` (checked: `"%s-%s-%d", dev->name, "TxRx"`); before v6.12 cut to 17 characters, so `enp4s0f0np0-TxRx-` (numbered in order, see `truncated_queue_word`) | |
//! | bnx2x, qede | `eth0-fp-0` (checked for qede and bnx2x: `"%s-fp-%d"`) | `eth0` (bnx2x slow path, checked: `request_irq(.., bp->dev->name)`; dumps: bnx2x-fp, bnx2x-npar-underscore), `sp-0-3b:00.00` (qed slow path `"sp-%d-%02x:%02x.%02x"`, from memory) |
//! | tg3 | `eth0-txrx-1`, `eth0-rx-2`, `eth0-tx-3` (checked: `"%s-txrx-%d"` with the vector number, so vector N >= 1 serves ring N-1); TSS off: `eth0-tx-0` (TX ring 0 on vector 0) and `eth0-rx-1..n` (RX rings 0..n-1) | `eth0-0` (vector 0 without rings: link/error) |
//! | be2net | `eth0-q0` (checked: `"%s-q%d"`) | |
//! | sfc | `eth1-0` (checked: `"%s%s-%d"` with an empty type), `eth1-rx-0`, `eth1-tx-0` | `eth1-xdp-0`, `eth1-ptp` (dump: sfc-numbered-channels) |
//! | ena | `eth0-Tx-Rx-0` (checked: `"%s-Tx-Rx-%d"`) | `ena-mgmnt@pci:...` (checked); vectors left without a name after `ethtool -L` stay unmapped (dump: ena-freed-vectors) |
//! | gve | `gve-ntfy-blk0@pci:...` (checked; blocks 0..n/2 serve TX queues and n/2..n RX queues, checked in `gve_rx_idx_to_ntfy`) | `gve-mgmnt@pci:...` (checked; dump: gve-ntfy-blocks) |
//! | virtio_net | `virtio0-input.0`, `virtio0-output.0` (checked: `"%s-%s", dev_name, vq name`), `virtio0-virtqueues` (one shared vector) | `virtio0-config`, `virtio0-control` |
//! | vmxnet3 | `ens192-rxtx-0`, `ens192-rx-0`, `ens192-tx-0` (checked: `"%s-rxtx-%d"`) | `ens192-event-4` (checked: `"%s-event-%d"`; dump: vmxnet3-event) |
//! | hns3 | `hns3-0000:7d:00.0-TxRx-0` (checked: `"%s-%s-%s-%d", hns3_driver_name, pci_name, "TxRx"` with the index counted twice, so `TxRx-2k` is vector k and serves queue k; real names in the wayca-irqdump README of a Kunpeng server) | `hclge-misc-0000:7d:00.0` (from memory) |
//! | e1000, e1000e | `eth0-rx-0`, `eth0-tx-0` (checked: e1000e `"%s-rx-0"`), `eth0` alone on MSI or a legacy INTx line | `eth0` beside named rx/tx vectors (other/link; dump: e1000e-msix-riscv) |
//! | mana | `mana_q0@pci:7870:00:00.0` (checked: `"mana_q%d@pci:%s"`; dump: mana-queues) | `mana_hwc@pci:...` (hardware channel, checked) |
//! | nicvf (ThunderX) | `eth0-rxtx-0` (checked: `"%s-rxtx-%d"`) | `eth0-rbdr-0`, `eth0-qset-err-0` (checked; dump: thunderx-nicvf-sideband) |

use crate::snapshot::{IrqMapping, QueueKind, QueueRef, QueueSource};

/// What a name's shape says, before the other IRQs of the device are seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameShape {
    /// A word tells the queue (`TxRx`, `rx`, `fp`, `comp`, `input`, ...).
    Queue,
    /// A word says it is not a queue (misc, event, config, mgmnt, ...).
    NotQueue,
    /// `dev-N` without a word: a queue on sfc and mlx4, the link vector
    /// on tg3 when named vectors sit beside it.
    Numbered,
    /// Just the device (`eth0`): the only vector of a single-queue NIC, or
    /// the other/mailbox vector beside named queue vectors.
    Bare,
    /// Nothing recognisable.
    Unknown,
}

/// What a name tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqName {
    /// Device token: an interface name (`eth0`), a virtio device (`virtio2`),
    /// a PCI address (hns3) or a driver prefix (`mlx5`); `None` when nothing
    /// recognisable.
    pub device: Option<String>,
    /// The queue served, as far as the name alone tells (`Numbered` names
    /// carry their number tentatively; see [`map_queues`]).
    pub queue: Option<QueueRef>,
    /// PCI address after `@pci:` (or `@` on mlx4), if present.
    pub pci: Option<String>,
    /// The name's shape.
    pub shape: NameShape,
    /// Last queue of a range the vector serves: ice out of tree names a
    /// vector with several queues `ice-eth0-TxRx-2-3` (queues 2 to 3, with
    /// `queue` 2); `None` for one queue.
    pub last: Option<u32>,
}

fn q(kind: QueueKind, index: Option<u32>) -> Option<QueueRef> {
    Some(QueueRef { kind, index })
}

/// Words that mark a vector that serves no data queue.
const NOT_QUEUE_WORDS: &[&str] = &[
    "misc", "link", "lsc", "async", "event", "config", "control", "ctrl", "mailbox", "mbx",
    "mgmnt", "mgmt", "cmd", "pages", "ptp", "admin", "aeq", "sp", "other", "err", "ll_ts", "xdp",
    "cmd_eq", "pages_eq", "fdir", "hwc", "rbdr", "qset",
];

/// Driver prefixes put before the interface name (i40e/ice/iavf/hns3).
const DRIVER_PREFIXES: &[&str] = &["i40e-", "ice-", "iavf-", "ixgbe-", "igb-", "hns3-"];

fn is_not_queue_word(w: &str) -> bool {
    let w = w.to_ascii_lowercase();
    let stem = w.trim_end_matches(|c: char| c.is_ascii_digit());
    NOT_QUEUE_WORDS.contains(&w.as_str()) || NOT_QUEUE_WORDS.contains(&stem)
}

/// Whether `s` looks like an interface name (`eth0`, `ens1f0`, `enp3s0.100`).
fn is_ifname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
        && s.chars().any(|c| c.is_ascii_digit())
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// Split at the last `sep` whose tail is all digits: `("eth0-TxRx", 3)`.
fn trailing_index<'a>(s: &'a str, seps: &[char]) -> Option<(&'a str, u32)> {
    let pos = s.rfind(|c: char| seps.contains(&c))?;
    let idx: u32 = s[pos + 1..].parse().ok()?;
    Some((&s[..pos], idx))
}

/// `enp5s0f1-qset` -> `enp5s0f1`: drop trailing sideband words.
fn strip_sideband_words(mut dev: &str) -> &str {
    while let Some((head, word)) = dev.rsplit_once('-') {
        if head.is_empty() || !is_not_queue_word(word) {
            break;
        }
        dev = head;
    }
    dev
}

fn strip_driver_prefix(dev: &str) -> &str {
    DRIVER_PREFIXES
        .iter()
        .find_map(|p| dev.strip_prefix(p))
        .unwrap_or(dev)
}

fn named(device: &str, queue: Option<QueueRef>, pci: Option<String>, shape: NameShape) -> IrqName {
    IrqName {
        device: Some(device.to_string()),
        queue,
        pci,
        shape,
        last: None,
    }
}

/// Interpret one action name from `/proc/interrupts` (the first action of a
/// shared line).
pub fn parse_irq_name(name: &str) -> IrqName {
    let name = name.split(", ").next().unwrap_or(name).trim();
    let (base, pci) = match name.split_once("@pci:") {
        Some((b, p)) => (b, Some(p.to_string())),
        None => match name.split_once('@') {
            Some((b, p)) if p.contains(':') => (b, Some(p.to_string())),
            _ => (name, None),
        },
    };
    let none = IrqName {
        device: None,
        queue: None,
        pci: pci.clone(),
        shape: NameShape::Unknown,
        last: None,
    };
    if base.is_empty() {
        return none;
    }
    by_driver_prefix(base, &pci)
        .or_else(|| by_suffix(base, &pci))
        .unwrap_or(none)
}

/// Names that start with a driver's own prefix: mlx5, mlx4, gve, ena/hclge
/// management vectors, virtio.
fn by_driver_prefix(base: &str, pci: &Option<String>) -> Option<IrqName> {
    let pci = pci.clone();
    if let Some(rest) = base.strip_prefix("mlx5_") {
        return Some(
            match rest.strip_prefix("comp").and_then(|i| i.parse().ok()) {
                Some(i) => named(
                    "mlx5",
                    q(QueueKind::Combined, Some(i)),
                    pci,
                    NameShape::Queue,
                ),
                None => named("mlx5", q(QueueKind::Other, None), pci, NameShape::NotQueue),
            },
        );
    }
    if let Some(rest) = base.strip_prefix("mlx4-") {
        // Vector 0 is the async EQ, completion vectors start at 1.
        return Some(match rest.parse::<u32>().ok() {
            Some(i) if i >= 1 => named(
                "mlx4",
                q(QueueKind::Combined, Some(i - 1)),
                pci,
                NameShape::Queue,
            ),
            _ => named("mlx4", q(QueueKind::Other, None), pci, NameShape::NotQueue),
        });
    }
    // mana: `mana_q<N>@pci:...` serves queue N; `mana_hwc@pci:...` is the
    // hardware-channel vector ("mana_q%d@pci:%s" with i - 1 for MSI-X
    // vector i, "mana_hwc@pci:%s" for vector 0, in mana_gd_setup_irqs).
    if let Some(rest) = base.strip_prefix("mana_") {
        if let Some(i) = rest.strip_prefix('q').and_then(|i| i.parse().ok()) {
            return Some(named(
                "mana",
                q(QueueKind::Combined, Some(i)),
                pci,
                NameShape::Queue,
            ));
        }
        if rest == "hwc" {
            return Some(named(
                "mana",
                q(QueueKind::Other, None),
                pci,
                NameShape::NotQueue,
            ));
        }
    }
    if let Some(rest) = base.strip_prefix("gve-") {
        return Some(
            match rest.strip_prefix("ntfy-blk").and_then(|i| i.parse().ok()) {
                Some(i) => named(
                    "gve",
                    q(QueueKind::Combined, Some(i)),
                    pci,
                    NameShape::Queue,
                ),
                None => named("gve", q(QueueKind::Other, None), pci, NameShape::NotQueue),
            },
        );
    }
    // qed (under qede): the slow-path vector `sp-<hwfn>-<bus>:<slot>.<pf>`.
    if let Some((hwfn, bdf)) = base.strip_prefix("sp-").and_then(|r| r.split_once('-')) {
        if !hwfn.is_empty() && hwfn.bytes().all(|b| b.is_ascii_digit()) && bdf.contains(':') {
            return Some(named(
                "qed",
                q(QueueKind::Other, None),
                pci,
                NameShape::NotQueue,
            ));
        }
    }
    if base.starts_with("ena-") || base.starts_with("hclge") || base.starts_with("hclgevf") {
        let dev = base.split('-').next().unwrap_or(base);
        return Some(named(
            dev,
            q(QueueKind::Other, None),
            pci,
            NameShape::NotQueue,
        ));
    }
    if base.starts_with("virtio") {
        if let Some((dev, tail)) = base.split_once('-') {
            let (kind, idx) = match tail.split_once('.') {
                Some(("input", i)) => (QueueKind::Rx, i.parse().ok()),
                Some(("output", i)) => (QueueKind::Tx, i.parse().ok()),
                // One vector shared by every virtqueue (too few MSI-X vectors).
                None if tail == "virtqueues" => (QueueKind::Combined, Some(0)),
                _ => (QueueKind::Other, None),
            };
            return Some(match idx {
                Some(_) => named(dev, q(kind, idx), pci, NameShape::Queue),
                None => named(dev, q(QueueKind::Other, None), pci, NameShape::NotQueue),
            });
        }
    }
    None
}

/// Names of the `<dev>-<word>-<n>` families, `<dev>:<word>` non-queue
/// vectors, and a bare interface name.
fn by_suffix(base: &str, pci: &Option<String>) -> Option<IrqName> {
    let pci = pci.clone();
    // `<pci>:misc`, `<pci>:mbx`, `eth0:lsc`: the word after the last ':'.
    if let Some((head, word)) = base.rsplit_once(':') {
        if is_not_queue_word(word) {
            let dev = strip_driver_prefix(head);
            return Some(named(
                dev,
                q(QueueKind::Other, None),
                pci,
                NameShape::NotQueue,
            ));
        }
    }
    let patterns: [(&str, QueueKind); 10] = [
        ("-Tx-Rx", QueueKind::Combined),
        ("-TxRx", QueueKind::Combined),
        ("-txrx", QueueKind::Combined),
        ("-rxtx", QueueKind::Combined),
        ("-fp", QueueKind::Combined),
        ("-rx", QueueKind::Rx),
        ("-tx", QueueKind::Tx),
        ("-Rx", QueueKind::Rx),
        ("-Tx", QueueKind::Tx),
        ("-q", QueueKind::Combined),
    ];
    if let Some(n) = truncated_queue_word(base, &patterns[..9], &pci) {
        return Some(n);
    }
    // Only `-` separates the number: `em1_1` is an interface, not vector 1
    // of `em1` (real dump bnx2x-npar-underscore).
    if let Some((head, idx)) = trailing_index(base, &['-']) {
        if let Some(n) = queue_word(head, idx, &patterns, &pci) {
            return Some(n);
        }
        // ice >= 1.16 (out of tree): a vector with several queue pairs is
        // `ice-eth0-TxRx-A-B`, RX queues A to B ("%s-%s-%u-%u", rx base,
        // base + num_ring_rx - 1, checked in ice_vsi_req_single_irq_msix).
        if let Some((head2, a)) = trailing_index(head, &['-']) {
            if let Some(mut n) = queue_word(head2, a, &patterns, &pci) {
                if n.shape == NameShape::Queue && idx > a {
                    n.last = Some(idx);
                }
                return Some(n);
            }
        }
        // `ens192-event-4`, `eth1-xdp-0`, nicvf `enp5s0f1-qset-err-0`.
        if let Some((dev, word)) = head.rsplit_once('-') {
            if is_not_queue_word(word) {
                let dev = strip_driver_prefix(strip_sideband_words(dev));
                return Some(named(
                    dev,
                    q(QueueKind::Other, None),
                    pci,
                    NameShape::NotQueue,
                ));
            }
        }
        if is_ifname(head) && !head.contains('-') {
            return Some(named(
                head,
                q(QueueKind::Combined, Some(idx)),
                pci,
                NameShape::Numbered,
            ));
        }
    }
    // be2net: `eth0-q3` (no separator before the number).
    if let Some((head, tail)) = base.rsplit_once("-q") {
        if let Ok(idx) = tail.parse() {
            if is_ifname(head) {
                return Some(named(
                    head,
                    q(QueueKind::Combined, Some(idx)),
                    pci,
                    NameShape::Queue,
                ));
            }
        }
    }
    // `eth1-ptp`, `virtio`-less `-config`, `eth0-lsc`.
    if let Some((dev, word)) = base.rsplit_once('-') {
        if is_not_queue_word(word) {
            let dev = strip_driver_prefix(dev);
            return Some(named(
                dev,
                q(QueueKind::Other, None),
                pci,
                NameShape::NotQueue,
            ));
        }
    }
    if is_ifname(base) && !base.contains('-') && !base.contains(':') {
        return Some(named(base, None, pci, NameShape::Bare));
    }
    None
}

/// `<dev>-<word>` with a queue word from `patterns`, numbered `idx`; a
/// sideband word just before it (`i40e-<pci>:fdir-TxRx-0`,
/// `ice-<pci>:ctrl-TxRx-0`, `eth0-fdir-TxRx-0`) makes it a non-queue vector.
fn queue_word(
    head: &str,
    idx: u32,
    patterns: &[(&str, QueueKind)],
    pci: &Option<String>,
) -> Option<IrqName> {
    let (dev, kind) = patterns
        .iter()
        .find_map(|(suffix, kind)| head.strip_suffix(suffix).map(|d| (d, *kind)))?;
    if let Some((owner, word)) = dev.rsplit_once([':', '-']) {
        if NOT_QUEUE_WORDS.contains(&word.to_ascii_lowercase().as_str()) {
            return Some(named(
                strip_driver_prefix(owner),
                q(QueueKind::Other, None),
                pci.clone(),
                NameShape::NotQueue,
            ));
        }
    }
    Some(named(
        strip_driver_prefix(dev),
        q(kind, Some(idx)),
        pci.clone(),
        NameShape::Queue,
    ))
}

/// A queue name cut before its number: bnxt before v6.12 wrote
/// `"%s-%s-%d"` into `char name[IFNAMSIZ + 2]`, so with an 11-character
/// interface every queue vector is `enp4s0f0np0-TxRx-` ("bnxt_en: resize
/// bnxt_irq name field to fit format string", Message-ID
/// <20240909202737.93852-4-michael.chan@broadcom.com>). The queue word is
/// kept and the number left unknown; [`map_queues`] numbers such vectors in
/// order.
fn truncated_queue_word(
    base: &str,
    patterns: &[(&str, QueueKind)],
    pci: &Option<String>,
) -> Option<IrqName> {
    let head = base.strip_suffix('-').unwrap_or(base);
    let (dev, kind) = patterns
        .iter()
        .find_map(|(suffix, kind)| head.strip_suffix(suffix).map(|d| (d, *kind)))?;
    let dev = strip_driver_prefix(dev);
    if !is_ifname(dev)
        || dev
            .rsplit_once(['-', ':'])
            .is_some_and(|(_, w)| is_not_queue_word(w))
    {
        return None;
    }
    Some(named(dev, q(kind, None), pci.clone(), NameShape::Queue))
}

/// One IRQ of an interface, as [`map_queues`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedIrq<'a> {
    /// IRQ number.
    pub number: u32,
    /// Its `/proc/interrupts` name.
    pub name: &'a str,
    /// Whether it is one of the device's `msi_irqs`.
    pub msi: bool,
    /// Whether it is the device's `device/irq` (legacy INTx) line.
    pub legacy: bool,
}

/// The queue of one IRQ after [`map_queues`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedIrq {
    /// IRQ number.
    pub number: u32,
    /// Queue served (`Other` for a non-queue vector); `None` when unknown.
    pub queue: Option<QueueRef>,
    /// How it was found; `None` when `queue` is `None`.
    pub source: Option<QueueSource>,
    /// Last queue when the vector serves a range (`queue` is the first);
    /// see [`IrqName::last`].
    pub last: Option<u32>,
}

/// Map the IRQs of one interface (ascending by number) to its queues.
///
/// Names that tell the queue win; when some do, `dev-N` and bare names
/// beside them are the link/other vector (tg3, igb, ixgbevf, e1000e). When
/// none does, `dev-N` names are queues (sfc, mlx4 renamed). Otherwise the
/// unnamed vectors, less the non-queue ones, serve queues 0, 1, ... in
/// `msi_irqs` order, or the legacy INTx line serves queue 0; when there are
/// more of them than `nqueues` (and `nqueues > 0`) nothing is guessed.
/// `driver` renumbers the schemes whose number is not the queue (tg3: vector
/// N serves ring N-1; gve: the first half of the notify blocks serve TX
/// queues, the second half RX queues).
pub fn map_queues(
    irqs: &[OwnedIrq<'_>],
    driver: Option<&str>,
    nqueues: usize,
) -> (Vec<MappedIrq>, Option<IrqMapping>) {
    let parsed: Vec<IrqName> = irqs.iter().map(|i| parse_irq_name(i.name)).collect();
    let has = |s: NameShape| parsed.iter().any(|p| p.shape == s);
    let other = q(QueueKind::Other, None);
    let mut out: Vec<MappedIrq> = irqs
        .iter()
        .map(|i| MappedIrq {
            number: i.number,
            queue: None,
            source: None,
            last: None,
        })
        .collect();
    let mut mapping = None;
    if has(NameShape::Queue) || has(NameShape::Numbered) {
        let numbered_are_queues = !has(NameShape::Queue);
        for (m, p) in out.iter_mut().zip(&parsed) {
            let (queue, source) = match p.shape {
                NameShape::Queue => (p.queue, Some(QueueSource::Name)),
                NameShape::Numbered if numbered_are_queues => (p.queue, Some(QueueSource::Name)),
                NameShape::Unknown => (None, None),
                _ => (other, Some(QueueSource::Name)),
            };
            m.queue = queue;
            m.source = source;
            m.last = p.last.filter(|_| p.shape == NameShape::Queue);
        }
        renumber(&mut out, driver);
        number_truncated(&mut out);
        mapping = Some(IrqMapping::Name);
    } else {
        for (m, p) in out.iter_mut().zip(&parsed) {
            if p.shape == NameShape::NotQueue {
                m.queue = other;
                m.source = Some(QueueSource::Name);
            }
        }
        let cands: Vec<usize> = parsed
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.shape, NameShape::Bare | NameShape::Unknown))
            .map(|(i, _)| i)
            .collect();
        let fits = cands.len() == 1 || nqueues == 0 || cands.len() <= nqueues;
        if !cands.is_empty() && fits {
            let all_legacy = cands.iter().all(|&i| irqs[i].legacy || !irqs[i].msi);
            let source = if cands.len() == 1 && all_legacy {
                QueueSource::LegacyIrq
            } else {
                QueueSource::MsiOrder
            };
            for (qi, &i) in cands.iter().enumerate() {
                out[i].queue = q(QueueKind::Combined, u32::try_from(qi).ok());
                out[i].source = Some(source);
            }
            mapping = Some(match source {
                QueueSource::LegacyIrq => IrqMapping::LegacyIrq,
                _ => IrqMapping::MsiOrder,
            });
        } else if !cands.is_empty() {
            mapping = Some(IrqMapping::Ambiguous);
        }
    }
    let any_queue = out
        .iter()
        .any(|m| m.queue.is_some_and(|q| q.kind != QueueKind::Other));
    if !any_queue && mapping != Some(IrqMapping::Ambiguous) && driver.is_some() {
        mapping = Some(IrqMapping::NoQueueIrqs);
    }
    (out, mapping)
}

/// Drop the queues an interface does not have: a vector mapped to RX queue
/// `i >= rx`, TX queue `i >= tx` or combined queue `i >= max(rx, tx)`
/// serves none of them and becomes `Other`. Some drivers keep the vectors
/// of every channel they could have after `ethtool -L` cut the channels
/// (mlx5 `mlx5_compN`, gve notify blocks, ena's unrequested vectors), so
/// their names alone overstate the queues. `rx` and `tx` are the
/// interface's real counts (`/sys/class/net/IF/queues/`); with both 0
/// (unknown) nothing changes.
pub fn retain_existing(mapped: &mut [MappedIrq], rx: usize, tx: usize) {
    if rx == 0 && tx == 0 {
        return;
    }
    let below = |i: u32, n: usize| usize::try_from(i).is_ok_and(|i| i < n);
    for m in mapped.iter_mut() {
        let Some(cur) = m.queue else { continue };
        let exists = match (cur.kind, cur.index) {
            (QueueKind::Other, _) | (_, None) => true,
            (QueueKind::Rx, Some(i)) => below(i, rx),
            (QueueKind::Tx, Some(i)) => below(i, tx),
            (QueueKind::Combined, Some(i)) => below(i, rx.max(tx)),
        };
        if !exists {
            m.queue = q(QueueKind::Other, None);
            m.last = None;
        } else if let Some(last) = m.last {
            // A range reaching past the real queues ends at the last one.
            let n = match cur.kind {
                QueueKind::Rx => rx,
                QueueKind::Tx => tx,
                _ => rx.max(tx),
            };
            let end = u32::try_from(n.saturating_sub(1)).unwrap_or(u32::MAX);
            m.last = (last.min(end) > cur.index.unwrap_or(0)).then_some(last.min(end));
        }
    }
}

/// Names cut before their number (see `truncated_queue_word`): when a kind
/// has such a vector, its vectors serve queues 0, 1, ... in IRQ order (the
/// numbers left on longer-cut names are not trusted either).
fn number_truncated(out: &mut [MappedIrq]) {
    for kind in [QueueKind::Combined, QueueKind::Rx, QueueKind::Tx] {
        let of_kind = |m: &MappedIrq| m.queue.is_some_and(|q| q.kind == kind);
        if !out
            .iter()
            .any(|m| of_kind(m) && m.queue.is_some_and(|q| q.index.is_none()))
        {
            continue;
        }
        let mut next = 0u32;
        for m in out.iter_mut().filter(|m| of_kind(m)) {
            m.queue = q(kind, Some(next));
            m.source = Some(QueueSource::MsiOrder);
            m.last = None;
            next = next.saturating_add(1);
        }
    }
}

/// Driver-specific numbering (see [`map_queues`]).
fn renumber(out: &mut [MappedIrq], driver: Option<&str>) {
    let queue_ix = |m: &MappedIrq| {
        m.queue
            .filter(|q| q.kind != QueueKind::Other)
            .and_then(|q| q.index)
    };
    match driver {
        // tg3 names a vector by its number (`"%s-txrx-%d"`, `"%s-tx-%d"`,
        // `"%s-rx-%d"`, `"%s-%d"` with the vector number; checked in
        // tg3_request_irq). With several vectors RSS is on and vector 0
        // carries no RX ring, so an RX or TX/RX vector N serves ring N-1.
        // With TSS on, TX rings sit on vectors 1.. too (`txrx-N`, ring N-1)
        // and vector 0 is link/error only (`eth0-0`); with TSS off the one
        // TX ring sits on vector 0 (`eth0-tx-0`, ring 0) and vectors 1..n
        // are RX only (`eth0-rx-1..n`, rings 0..n-1). So: vector 0 is ring 0,
        // vector N >= 1 is ring N-1 (the TSS-off case seen in the real dump
        // tests/fixtures/real-interrupts/tg3-tss-off).
        Some("tg3") => {
            for m in out.iter_mut() {
                if let Some(q) = m.queue.as_mut() {
                    if q.kind != QueueKind::Other {
                        q.index = q.index.map(|i| i.saturating_sub(1));
                    }
                }
            }
        }
        // hns3 counts a TX/RX vector twice when naming it
        // (`"%s-%s-%s-%d", .., "TxRx", txrx_int_idx++); txrx_int_idx++;` in
        // hns3_nic_init_irq), so vector k is `TxRx-2k`; queue i sits on
        // vector i % vector_num (hns3_nic_init_vector_data), so `TxRx-2k`
        // serves queue k (and k + vector_num, ... when there are more
        // queues than vectors). `Rx-N`/`Tx-N` count once. Only when every
        // TxRx number is even: a name list counted once (`TxRx-1`) keeps
        // its numbers.
        Some("hns3") => {
            let combined = || {
                out.iter()
                    .filter_map(|m| m.queue)
                    .filter(|q| q.kind == QueueKind::Combined)
            };
            if combined().any(|q| q.index.is_some_and(|i| i % 2 == 1)) {
                return;
            }
            for m in out.iter_mut() {
                if let Some(q) = m.queue.as_mut() {
                    if q.kind == QueueKind::Combined {
                        q.index = q.index.map(|i| i / 2);
                    }
                }
            }
        }
        Some("gve") => {
            let n = out.iter().filter(|m| queue_ix(m).is_some()).count();
            let half = u32::try_from(n / 2).unwrap_or(u32::MAX);
            if n >= 2 && n % 2 == 0 {
                for m in out.iter_mut() {
                    if let Some(q) = m.queue.as_mut() {
                        if q.kind == QueueKind::Other {
                            continue;
                        }
                        match q.index {
                            Some(i) if i < half => q.kind = QueueKind::Tx,
                            Some(i) => {
                                q.kind = QueueKind::Rx;
                                q.index = Some(i - half);
                            }
                            None => {}
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
