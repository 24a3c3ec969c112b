//! What an IRQ's name says about its device and queue.
//!
//! Driver conventions covered: ixgbe/ixgbevf/igb/bnxt (`eth0-TxRx-3`,
//! `eth0-rx-1`, `eth0-tx-1`), i40e/ice/iavf (`i40e-eth0-TxRx-3`), ENA
//! (`ens5-Tx-Rx-0`), mlx5 (`mlx5_comp3@pci:0000:00:06.0`), gve
//! (`gve-ntfy-blk3@pci:...`), bnx2x (`eth0-fp-3`), virtio
//! (`virtio0-input.0`, `virtio0-output.0`) and single-vector NICs (`eth0`).

use crate::snapshot::{QueueKind, QueueRef};

/// What a name tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqName {
    /// Device token: an interface name (`eth0`), a virtio device (`virtio2`)
    /// or a driver prefix (`mlx5`); `None` when nothing recognisable.
    pub device: Option<String>,
    /// The queue served, when told.
    pub queue: Option<QueueRef>,
    /// PCI address after `@pci:`, if present.
    pub pci: Option<String>,
}

fn q(kind: QueueKind, index: Option<u32>) -> Option<QueueRef> {
    Some(QueueRef { kind, index })
}

/// Split `base` at the last `sep` whose tail is all digits: `("eth0-TxRx", 3)`.
fn trailing_index(s: &str, seps: &[char]) -> Option<(String, u32)> {
    let pos = s.rfind(|c: char| seps.contains(&c))?;
    let idx: u32 = s[pos + 1..].parse().ok()?;
    Some((s[..pos].to_string(), idx))
}

/// Interpret one action name from `/proc/interrupts`.
pub fn parse_irq_name(name: &str) -> IrqName {
    let name = name.split(", ").next().unwrap_or(name).trim();
    let (base, pci) = match name.split_once("@pci:") {
        Some((b, p)) => (b, Some(p.to_string())),
        None => (name, None),
    };
    let none = IrqName {
        device: None,
        queue: None,
        pci: pci.clone(),
    };
    if base.is_empty() {
        return none;
    }
    if let Some(rest) = base.strip_prefix("mlx5_comp") {
        if let Ok(i) = rest.parse() {
            return IrqName {
                device: Some("mlx5".into()),
                queue: q(QueueKind::Combined, Some(i)),
                pci,
            };
        }
    }
    if base.starts_with("mlx5_") || base.starts_with("ena-mgmnt") {
        return IrqName {
            device: Some(base.split('_').next().unwrap_or(base).into()),
            queue: q(QueueKind::Other, None),
            pci,
        };
    }
    if let Some(rest) = base.strip_prefix("gve-ntfy-blk") {
        if let Ok(i) = rest.parse() {
            return IrqName {
                device: Some("gve".into()),
                queue: q(QueueKind::Combined, Some(i)),
                pci,
            };
        }
    }
    if base.starts_with("virtio") {
        if let Some((dev, tail)) = base.split_once('-') {
            let (kind, idx) = match tail.split_once('.') {
                Some(("input", i)) => (QueueKind::Rx, i.parse().ok()),
                Some(("output", i)) => (QueueKind::Tx, i.parse().ok()),
                _ => (QueueKind::Other, None),
            };
            let kind = if idx.is_none() {
                QueueKind::Other
            } else {
                kind
            };
            return IrqName {
                device: Some(dev.into()),
                queue: q(kind, idx),
                pci,
            };
        }
    }
    let patterns: [(&str, QueueKind); 8] = [
        ("-Tx-Rx", QueueKind::Combined),
        ("-TxRx", QueueKind::Combined),
        ("-txrx", QueueKind::Combined),
        ("-fp", QueueKind::Combined),
        ("-rx", QueueKind::Rx),
        ("-tx", QueueKind::Tx),
        ("-Rx", QueueKind::Rx),
        ("-Tx", QueueKind::Tx),
    ];
    if let Some((head, idx)) = trailing_index(base, &['-', '_']) {
        for (suffix, kind) in patterns {
            if let Some(dev) = head.strip_suffix(suffix) {
                let dev = ["i40e-", "ice-", "iavf-", "ixgbe-", "igb-"]
                    .iter()
                    .find_map(|p| dev.strip_prefix(p))
                    .unwrap_or(dev);
                return IrqName {
                    device: Some(dev.to_string()),
                    queue: q(kind, Some(idx)),
                    pci,
                };
            }
        }
    }
    if base
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        && base.chars().any(|c| c.is_ascii_digit())
        && !base.contains(':')
    {
        return IrqName {
            device: Some(base.to_string()),
            queue: None,
            pci,
        };
    }
    none
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, dev: Option<&str>, kind: Option<QueueKind>, idx: Option<u32>) {
        let p = parse_irq_name(name);
        assert_eq!(p.device.as_deref(), dev, "{name}");
        assert_eq!(p.queue.map(|q| q.kind), kind, "{name}");
        assert_eq!(p.queue.and_then(|q| q.index), idx, "{name}");
    }

    #[test]
    fn driver_conventions() {
        use QueueKind::*;
        check("eth0-TxRx-3", Some("eth0"), Some(Combined), Some(3));
        check("ens5-Tx-Rx-0", Some("ens5"), Some(Combined), Some(0));
        check(
            "i40e-ens1f0-TxRx-12",
            Some("ens1f0"),
            Some(Combined),
            Some(12),
        );
        check("eth1-rx-1", Some("eth1"), Some(Rx), Some(1));
        check("eth1-tx-0", Some("eth1"), Some(Tx), Some(0));
        check("eth0-fp-7", Some("eth0"), Some(Combined), Some(7));
        check("virtio2-input.0", Some("virtio2"), Some(Rx), Some(0));
        check("virtio2-output.3", Some("virtio2"), Some(Tx), Some(3));
        check("virtio2-config", Some("virtio2"), Some(Other), None);
        check(
            "mlx5_comp3@pci:0000:00:06.0",
            Some("mlx5"),
            Some(Combined),
            Some(3),
        );
        check(
            "mlx5_async0@pci:0000:00:06.0",
            Some("mlx5"),
            Some(Other),
            None,
        );
        check(
            "gve-ntfy-blk2@pci:0000:00:04.0",
            Some("gve"),
            Some(Combined),
            Some(2),
        );
        check("eth0", Some("eth0"), None, None);
        check("ACPI:Ged", None, None, None);
        check("", None, None, None);
        assert_eq!(
            parse_irq_name("mlx5_comp3@pci:0000:00:06.0").pci.as_deref(),
            Some("0000:00:06.0")
        );
    }
}
