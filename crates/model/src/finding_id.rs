//! [`FindingId`]: the one id of every finding rule, the snapshot's
//! (`inspect`) and the diagnosis's (`doctor`), and the macro that declares an
//! id enum spelled in kebab-case.

/// Declares an id enum from one list of `Variant => "spelling"`: `ALL`,
/// `as_str`, `parse`, `Display`, and serde as the spelling (an unknown
/// spelling is refused with `unknown <what> `x``).
macro_rules! string_ids {
    ($(#[$tdoc:meta])* $name:ident, $what:literal, { $($(#[$doc:meta])* $variant:ident => $id:literal,)* }) => {
        $(#[$tdoc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$doc])* $variant,)*
        }

        impl $name {
            /// Every id, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The id's spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $id,)*
                }
            }

            /// The id spelled `s`, if there is one.
            pub fn parse(s: &str) -> Option<$name> {
                match s {
                    $($id => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as serde::Deserialize>::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    serde::de::Error::custom(format!(concat!("unknown ", $what, " `{}`"), s))
                })
            }
        }
    };
}
pub(crate) use string_ids;

string_ids! {
    /// Stable id of a finding rule (one rule each, in `doctor`'s one
    /// catalogue), of the snapshot alone or of the diagnosis; JSON and the
    /// human output spell it in kebab-case. `irq-remote-node` and `rps-off`
    /// look at both: doctor's finding builds on the snapshot's.
    FindingId, "finding rule", {
    // Rules of the snapshot alone (`inspect`, `doctor::snapshot`).
    /// irqbalance is running.
    IrqbalanceRunning => "irqbalance-running",
    /// tuned is running or left a profile active.
    Tuned => "tuned",
    /// A device's NUMA node is unknown (-1).
    NumaNodeUnknown => "numa-node-unknown",
    /// A queue IRQ runs on a node other than the NIC's (one rule: the
    /// snapshot's look and doctor's).
    IrqRemoteNode => "irq-remote-node",
    /// A queue IRQ may run on CPUs of several nodes.
    IrqAffinitySpansNodes => "irq-affinity-spans-nodes",
    /// A queue IRQ may run on an isolated or nohz_full CPU.
    IrqOnIsolatedCpu => "irq-on-isolated-cpu",
    /// Every queue IRQ of a NIC on one CPU.
    IrqsOnOneCpu => "irqs-on-one-cpu",
    /// Queue IRQs on SMT siblings of each other.
    IrqsOnSmtSiblings => "irqs-on-smt-siblings",
    /// RPS CPUs include the SMT sibling of the queue's IRQ CPU.
    RpsOnIrqSibling => "rps-on-irq-sibling",
    /// RPS CPUs include the queue's IRQ CPU.
    RpsIncludesIrqCpu => "rps-includes-irq-cpu",
    /// One half of RFS configured.
    RfsHalfConfigured => "rfs-half-configured",
    /// The NIC dropped packets for lack of descriptors or buffer.
    NicRxDrops => "nic-rx-drops",
    // Diagnosis rules (`doctor`, `nettune_doctor::CATALOGUE`).
    /// NET_RX softirq time concentrated on few CPUs while others idle.
    SoftirqConcentrated => "softirq-concentrated",
    /// Fewer RX queues than CPUs and RPS off (one rule: the snapshot's look
    /// against online CPUs, doctor's against usable physical cores).
    RpsOff => "rps-off",
    /// Several queue IRQs of one NIC on one CPU or on SMT siblings.
    IrqStacked => "irq-stacked",
    /// softnet backlog drops or time_squeeze growing.
    SoftnetDrops => "softnet-drops",
    /// UDP RcvbufErrors growing.
    UdpRcvbufErrors => "udp-rcvbuf-errors",
    /// irqbalance or tuned owning knobs a plan (or a hand) also sets.
    IrqOwnerConflict => "irq-owner-conflict",
    /// TCP ListenOverflows/ListenDrops growing.
    ListenDrops => "listen-drops",
    /// Ephemeral ports held by TIME_WAIT.
    TimewaitExhaustion => "timewait-exhaustion",
    /// Retransmits that are reordering, not loss.
    TcpReordering => "tcp-reordering",
    /// Socket buffer maxima below the BDP.
    BuffersBelowBdp => "buffers-below-bdp",
    /// Coalescing against the goal.
    CoalesceMismatch => "coalesce-mismatch",
    /// NIC receive drops (missed, no buffer, FIFO).
    NicDrops => "nic-drops",
    /// RX ring well below its maximum while the NIC drops.
    RingSmall => "ring-small",
    /// The cloud instance's allowance counters rise.
    CloudAllowance => "cloud-allowance",
    /// Power saving on CPUs under a latency goal.
    CpuPower => "cpu-power",
    /// A cloud guest on a paravirtual NIC where SR-IOV/ENA/gVNIC is offered.
    EnhancedNetworkingOff => "enhanced-networking-off",
    /// A busy network process pinned to the NIC's interrupt CPUs or a remote node.
    AppOnIrqCpu => "app-on-irq-cpu",
    /// Checksum, GRO, TSO or GSO off where supported.
    OffloadOff => "offload-off",
    /// A deep FIFO qdisc where fq_codel or fq is available.
    Bufferbloat => "bufferbloat",
    /// Boot-time configuration overrides a knob the plan sets.
    BootOverride => "boot-override",
    /// Conntrack table near full or dropping.
    ConntrackFull => "conntrack-full",
    /// TCP memory near tcp_mem or orphans near tcp_max_orphans.
    TcpMemoryPressure => "tcp-memory-pressure",
    /// An interface's drops >= 2 % of its packets.
    IfaceDropRatio => "iface-drop-ratio",
    /// SYN queues full: TCPReqQFullDrop / TCPReqQFullDoCookies growing.
    SynQueueOverflow => "syn-queue-overflow",
    /// TCP resets sent, established resets or failed attempts at a high rate.
    TcpResets => "tcp-resets",
    /// UDP SndbufErrors growing.
    UdpSndbufErrors => "udp-sndbuf-errors",
    /// Traffic near the link speed.
    LinkSaturated => "link-saturated",
    /// Drops named by the kernel's own reason (skb:kfree_skb).
    DropsByReason => "drops-by-reason",
    }
}
