//! `/proc/interrupts`: per-CPU counts of every interrupt line.

use crate::error::ParseError;
use crate::units::{CpuId, IrqNumber};
use serde::{Deserialize, Serialize};

/// One numbered interrupt line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqLine {
    /// IRQ number.
    pub number: IrqNumber,
    /// Counts, one per column of [`Interrupts::cpus`].
    pub per_cpu: Vec<u64>,
    /// Controller, hwirq and trigger text (`PCI-MSIX-0000:00:03.0 1-edge`).
    pub chip: String,
    /// Action names (`eth0-TxRx-0`; shared lines join with `, `).
    pub name: String,
}

/// One named architecture line (`LOC`, `NMI`, `RES`, `ERR`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchLine {
    /// The label before the colon.
    pub label: String,
    /// Counts (one for `ERR`/`MIS`, else one per CPU column).
    pub per_cpu: Vec<u64>,
    /// Description text.
    pub desc: String,
}

/// Parsed `/proc/interrupts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupts {
    /// The CPU of each count column (offline CPUs have no column).
    pub cpus: Vec<CpuId>,
    /// Numbered lines.
    pub irqs: Vec<IrqLine>,
    /// Architecture lines.
    pub arch: Vec<ArchLine>,
}

impl Interrupts {
    /// The line for IRQ `n`.
    pub fn get(&self, n: IrqNumber) -> Option<&IrqLine> {
        self.irqs.iter().find(|l| l.number == n)
    }
}

fn is_trigger(tok: &str) -> bool {
    let t = tok.to_ascii_lowercase();
    t.ends_with("-edge")
        || t.ends_with("-level")
        || t.ends_with("-fasteoi")
        || t.ends_with("-edge-ioapic")
        || matches!(t.as_str(), "edge" | "level" | "fasteoi")
}

fn split_chip_name(rest: &str) -> (String, String) {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    if toks.is_empty() {
        return (String::new(), String::new());
    }
    if let Some(i) = toks.iter().rposition(|t| is_trigger(t)) {
        return (toks[..=i].join(" "), toks[i + 1..].join(" "));
    }
    if toks.len() == 1 {
        return (String::new(), toks[0].to_string());
    }
    let (chip, name) = toks.split_at(toks.len() - 1);
    (chip.join(" "), name.join(" "))
}

/// Parse the text of `/proc/interrupts`.
pub fn parse_interrupts(text: &str) -> Result<Interrupts, ParseError> {
    let (lines, cpus) = super::cpu_header(text)?;
    let n = cpus.len();
    let mut out = Interrupts {
        cpus,
        ..Default::default()
    };
    for (i, line) in lines {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (label, rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::format(ln, "no `:` after the IRQ label"))?;
        let label = label.trim();
        let mut rest = rest.trim_start();
        // Sized by what the line holds, not by the header: a long header
        // followed by many short lines must not allocate header x lines.
        let mut counts = Vec::new();
        while counts.len() < n {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let tok = &rest[..end];
            match tok.parse::<u64>() {
                Ok(v) => {
                    counts.push(v);
                    rest = rest[end..].trim_start();
                }
                Err(_) => break,
            }
            if rest.is_empty() {
                break;
            }
        }
        if let Ok(num) = label.parse::<u32>() {
            if counts.len() != n {
                return Err(ParseError::format(
                    ln,
                    format!("IRQ {num} has {} counts for {n} CPU columns", counts.len()),
                ));
            }
            let (chip, name) = split_chip_name(rest);
            out.irqs.push(IrqLine {
                number: IrqNumber(num),
                per_cpu: counts,
                chip,
                name,
            });
        } else {
            if label.is_empty() || label.contains(char::is_whitespace) {
                return Err(ParseError::invalid(ln, "interrupt label", label));
            }
            out.arch.push(ArchLine {
                label: label.to_string(),
                per_cpu: counts,
                desc: rest.trim().to_string(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Excerpt captured on this project's 2-vCPU KVM guest, kernel 6.18.
    const KVM_6_18: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 38:          0        184 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:        167          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
NMI:          0          0   Non-maskable interrupts
ERR:          0
";

    // Kernel 3.x style (c4.8xlarge era): chip and trigger in one token.
    const OLD_3_10: &str = "           CPU0       CPU1       CPU2
266:   12345          0          7   PCI-MSI-edge      eth0-TxRx-0
267:       0      99999          0   PCI-MSI-edge      eth0-TxRx-1
  9:       0          0          0   IO-APIC-fasteoi   acpi, i801_smbus
";

    #[test]
    fn parses_kvm_6_18() {
        let p = parse_interrupts(KVM_6_18).unwrap();
        assert_eq!(p.cpus, vec![CpuId(0), CpuId(1)]);
        let l = p.get(IrqNumber(38)).unwrap();
        assert_eq!(l.per_cpu, vec![0, 184]);
        assert_eq!(l.name, "virtio2-input.0");
        assert_eq!(l.chip, "PCI-MSIX-0000:00:03.0 1-edge");
        assert_eq!(p.arch.len(), 2);
        assert_eq!(p.arch[1].per_cpu, vec![0]);
    }

    #[test]
    fn parses_old_format_and_shared_lines() {
        let p = parse_interrupts(OLD_3_10).unwrap();
        assert_eq!(p.get(IrqNumber(267)).unwrap().name, "eth0-TxRx-1");
        assert_eq!(p.get(IrqNumber(267)).unwrap().chip, "PCI-MSI-edge");
        assert_eq!(p.get(IrqNumber(9)).unwrap().name, "acpi, i801_smbus");
    }

    #[test]
    fn offline_cpu_columns() {
        let p = parse_interrupts("  CPU0 CPU2\n 5: 1 2 IO-APIC 5-edge x\n").unwrap();
        assert_eq!(p.cpus, vec![CpuId(0), CpuId(2)]);
    }

    #[test]
    fn counts_are_sized_by_the_line_not_the_header() {
        let header: String = (0..1000).map(|c| format!(" CPU{c}")).collect();
        let p = parse_interrupts(&format!("{header}\nERR: 0\nMIS: 0\n")).unwrap();
        assert_eq!(p.arch[0].per_cpu, vec![0]);
        assert!(p.arch[0].per_cpu.capacity() < 1000);
    }

    #[test]
    fn cpu_columns_beyond_the_largest_cpu_are_refused() {
        assert!(parse_interrupts("  CPU0 CPU4294967295\n 5: 1 2 IO-APIC 5-edge x\n").is_err());
        assert!(parse_interrupts("  CPU0 CPU32768\n 5: 1 2 IO-APIC 5-edge x\n").is_err());
        assert!(parse_interrupts("  CPU0 CPU32767\n 5: 1 2 IO-APIC 5-edge x\n").is_ok());
    }

    #[test]
    fn truncated_and_garbage() {
        assert_eq!(parse_interrupts(""), Err(ParseError::Empty));
        assert!(parse_interrupts("garbage here\n").is_err());
        assert!(parse_interrupts("  CPU0 CPU1\n 38: 0\n").is_err());
        assert!(parse_interrupts("  CPU0 CPU1\n no colon line\n").is_err());
    }
}
