//! The catalogue of drop reasons: what each means, the finding it confirms
//! and the fix, or why it is not a tuning matter.
//!
//! Meanings follow the comments of `enum skb_drop_reason` in the kernel's
//! include/net/dropreason-core.h (include/linux/skbuff.h in 5.17 to 6.3);
//! the knobs are those of Documentation/networking/ip-sysctl.rst,
//! Documentation/admin-guide/sysctl/net.rst and
//! Documentation/networking/scaling.rst. Reasons not listed one by one fall
//! in a [`Group`] by their name's prefix, so a new kernel's reason still
//! gets a line. The names themselves are never hard-coded per kernel: they
//! come from the running kernel's format file (`format::parse_format`).

use crate::finding_id::FindingId;

/// A family of reasons, for those not listed one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// A buffer, queue or memory limit that a setting moves.
    Tunable,
    /// Nothing wants the packet (no socket, not our address, no route).
    NotForUs,
    /// A policy said drop: netfilter, tc, XDP, BPF, an LSM.
    Policy,
    /// TCP's own checks (old, out of window, bad flags, PAWS, MD5/AO).
    TcpCheck,
    /// A malformed or corrupted packet (checksums, headers, fragments).
    Malformed,
    /// Tunnels, bridges and other virtual devices.
    Virtual,
    /// Anything else.
    Other,
}

/// What the catalogue says about one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReasonInfo {
    /// The reason's name as the kernel prints it (`SOCKET_RCVBUFF`); for a
    /// group's line, the group's pattern (`TCP_*`).
    pub name: &'static str,
    /// Its family.
    pub group: Group,
    /// What the kernel means by it.
    pub meaning: &'static str,
    /// The doctor finding whose counters it confirms, if any.
    pub confirms: Option<FindingId>,
    /// The fix, or why there is none to tune.
    pub fix: &'static str,
}

const NOT_TUNING: &str = "not a tuning matter";

macro_rules! reasons {
    ($($name:literal, $group:ident, $confirms:expr, $meaning:literal, $fix:expr;)*) => {
        /// The reasons named one by one.
        pub const REASONS: &[ReasonInfo] = &[$(ReasonInfo {
            name: $name,
            group: Group::$group,
            meaning: $meaning,
            confirms: $confirms,
            fix: $fix,
        },)*];
    };
}

reasons! {
    "SOCKET_RCVBUFF", Tunable, Some(FindingId::UdpRcvbufErrors),
        "the socket's receive buffer is full: the application reads slower than packets arrive",
        "raise the socket's SO_RCVBUF (net.core.rmem_max caps it; rmem_default for sockets that set none) or read faster (more threads, recvmmsg)";
    "SOCKET_BACKLOG", Tunable, None,
        "the socket's backlog (packets that arrived while the application held the socket) is over its limit",
        "a larger receive buffer (SO_RCVBUF, tcp_rmem); shorter time holding the socket in the application";
    "PROTO_MEM", Tunable, Some(FindingId::TcpMemoryPressure),
        "the protocol's memory limit is reached (tcp_mem or udp_mem pages in use)",
        "raise net.ipv4.tcp_mem or udp_mem, or find the sockets holding the memory (ss -m)";
    "TCP_LISTEN_OVERFLOW", Tunable, Some(FindingId::ListenDrops),
        "the listening socket's accept queue was full when a handshake's last ACK arrived (named since Linux 6.15; a SYN to a full queue is freed as consumed, with no reason, and the ACK of a SYN cookie shows as NO_SOCKET at cookie_v4_check)",
        "a larger listen() backlog with net.core.somaxconn above it, and accept() sooner";
    "TCP_OFOMERGE", TcpCheck, Some(FindingId::TcpReordering),
        "an out-of-order segment was already covered by the out-of-order queue",
        "reordering on the path; nothing to tune on this host";
    "TCP_OFO_QUEUE_PRUNE", Tunable, Some(FindingId::TcpMemoryPressure),
        "the out-of-order queue was pruned because the socket's memory ran out",
        "a larger tcp_rmem maximum; find the reordering or loss that fills the queue";
    "TCP_OFO_DROP", TcpCheck, Some(FindingId::TcpReordering),
        "an out-of-order segment beyond the receive window, or with no memory to queue it",
        "a larger tcp_rmem maximum when memory is the cause; reordering on the path otherwise";
    "TCP_ZEROWINDOW", Tunable, None,
        "data arrived while this host advertised a zero window: its application does not read",
        "read faster, or a larger receive buffer";
    "QDISC_DROP", Tunable, Some(FindingId::LinkSaturated),
        "the queueing discipline refused the packet on transmit (its queue is full)",
        "a longer qdisc limit or txqueuelen when bursts are short; when the link is full, less traffic or a faster link";
    "QDISC_OVERLIMIT", Tunable, Some(FindingId::LinkSaturated),
        "the queueing discipline's limit was exceeded (a shaper such as tbf at its rate)",
        "the qdisc's limit or rate, if the shaping is not intended";
    "QDISC_CONGESTED", Tunable, Some(FindingId::LinkSaturated),
        "an AQM qdisc dropped the packet to signal congestion",
        "intended by the qdisc; ECN avoids the drop where both ends support it";
    "FQ_FLOW_LIMIT", Tunable, None,
        "fq's per-flow packet limit (flow_limit) is reached",
        "tc qdisc change ... fq flow_limit N, or pace the flow";
    "FQ_BAND_LIMIT", Tunable, None,
        "fq's per-band packet limit is reached",
        "fq's band limit";
    "FQ_HORIZON_LIMIT", Tunable, None,
        "fq dropped a packet timestamped beyond its horizon",
        "fq's horizon, or the sender's timestamps";
    "CAKE_FLOOD", Tunable, None,
        "cake's flood protection (BLUE) dropped the packet",
        "cake's settings, if the flow is not a flood";
    "CPU_BACKLOG", Tunable, Some(FindingId::SoftnetDrops),
        "the per-CPU backlog queue (netdev_max_backlog, or RPS's flow limit) is full",
        "raise net.core.netdev_max_backlog; spread the work over more CPUs (RPS/RSS)";
    "FULL_RING", Tunable, Some(FindingId::RingSmall),
        "the device's ring is full",
        "a longer ring (ethtool -G rx/tx), more queues, or faster service of the queue's interrupt";
    "NOMEM", Tunable, None,
        "an allocation failed (out of memory in the packet path)",
        "memory pressure on the host (vm.min_free_kbytes, fewer large buffers); not a network knob";
    "PFMEMALLOC", Tunable, None,
        "a packet from the emergency memory reserves reached a socket not allowed to use them",
        "memory pressure on the host; not a network knob";
    "NEIGH_QUEUEFULL", Tunable, None,
        "the queue of packets waiting for an address resolution (ARP/ND) is full",
        "neigh unres_qlen_bytes; find why resolution is slow";
    "NEIGH_CREATEFAIL", Tunable, None,
        "a neighbour entry could not be created (the table is at gc_thresh3)",
        "raise net.ipv4.neigh.default.gc_thresh1/2/3 on hosts with many neighbours";
    "NEIGH_FAILED", NotForUs, None,
        "address resolution failed: the next hop does not answer",
        "the neighbour is down or unreachable; not a tuning matter";
    "NEIGH_DEAD", NotForUs, None,
        "the neighbour entry was being removed",
        NOT_TUNING;
    "PKT_TOO_BIG", NotForUs, None,
        "the packet is larger than the MTU and cannot be fragmented",
        "the MTU along the path (and path MTU discovery: ICMP not blocked); not a tuning knob";
    "NO_SOCKET", NotForUs, None,
        "no socket wants the packet: nothing listens on that port, or the connection is gone; at cookie_v4_check, the ACK of a SYN cookie whose listener's accept queue is full",
        "nothing listening (start the service, or stop the sender); not a tuning matter, unless the location is cookie_v4_check: then a larger listen() backlog and net.core.somaxconn, and accept() sooner (listen-drops)";
    "OTHERHOST", NotForUs, None,
        "the packet is for another host (seen in promiscuous mode or on a shared segment)",
        NOT_TUNING;
    "NETFILTER_DROP", Policy, Some(FindingId::ConntrackFull),
        "netfilter (iptables, nftables) dropped it, a rule's verdict or a full conntrack table",
        "a firewall rule: not a tuning matter; when conntrack is full, net.netfilter.nf_conntrack_max";
    "UNHANDLED_PROTO", NotForUs, None,
        "no handler for the packet's protocol",
        NOT_TUNING;
    "NOT_SPECIFIED", Other, None,
        "the code that freed the packet gave no reason: its location is the only clue",
        "look at the location";
}

/// Each group's line: pattern, meaning, fix.
const GROUPS: &[(Group, &str, &str, &str)] = &[
    (Group::TcpCheck, "TCP_*", "TCP's own checks refused the segment (old or out-of-window data, bad flags, PAWS, MD5/AO signatures, resets)", "protocol behaviour or a misbehaving peer; not a tuning matter"),
    (Group::Malformed, "*_CSUM, *HDR*, FRAG_*, DUP_FRAG, PKT_TOO_SMALL, INVALID_PROTO", "a malformed or corrupted packet: checksum, header, length or fragment checks", "a bad link, NIC or sender; not a tuning matter (fragments: net.ipv4.ipfrag_high_thresh and ipfrag_time)"),
    (Group::NotForUs, "IP_*, IPV6_*", "the IP layer's checks: no route, not our address, a martian or local source, IPv6 disabled", "routing and addressing; not a tuning matter"),
    (Group::Policy, "TC_*, XDP, BPF_*, SECURITY_HOOK, SOCKET_FILTER, XFRM_*, IP_RPFILTER", "a program or policy said drop: tc, XDP, BPF, an LSM, a socket filter, IPsec policy, rp_filter", "the policy's owner; not a tuning matter"),
    (Group::Virtual, "VXLAN_*, *TUNNEL*, BRIDGE_*, MAC_*, TAP_*, ARP_*, CAN*", "tunnels, bridges, taps and other virtual devices refused it", "the virtual device's configuration; not a tuning matter"),
    (Group::Other, "*", "a reason this catalogue does not list one by one", "see include/net/dropreason-core.h of the running kernel"),
];

fn group_of(name: &str) -> Group {
    let has = |p: &str| name.contains(p);
    if name.starts_with("TCP_") {
        Group::TcpCheck
    } else if name.ends_with("_CSUM")
        || has("HDR")
        || name.starts_with("FRAG_")
        || matches!(name, "DUP_FRAG" | "PKT_TOO_SMALL" | "INVALID_PROTO")
    {
        Group::Malformed
    } else if name.starts_with("TC_")
        || name.starts_with("BPF_")
        || name.starts_with("XFRM_")
        || matches!(
            name,
            "XDP" | "SECURITY_HOOK" | "SOCKET_FILTER" | "IP_RPFILTER"
        )
    {
        Group::Policy
    } else if name.starts_with("IP_") || name.starts_with("IPV6") {
        Group::NotForUs
    } else if name.starts_with("VXLAN_")
        || has("TUNNEL")
        || name.starts_with("BRIDGE_")
        || name.starts_with("MAC_")
        || name.starts_with("TAP_")
        || name.starts_with("ARP_")
        || name.starts_with("CAN")
    {
        Group::Virtual
    } else {
        Group::Other
    }
}

/// What the catalogue says about `name`: its own line, or its group's.
pub fn info(name: &str) -> ReasonInfo {
    if let Some(r) = REASONS.iter().find(|r| r.name == name) {
        return *r;
    }
    let g = group_of(name);
    let (_, pattern, meaning, fix) =
        GROUPS
            .iter()
            .find(|(x, ..)| *x == g)
            .copied()
            .unwrap_or((Group::Other, "*", "", ""));
    ReasonInfo {
        name: pattern,
        group: g,
        meaning,
        confirms: None,
        fix,
    }
}

/// The group lines, for docs and `--help`: (pattern, meaning, fix).
pub fn groups() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    GROUPS.iter().map(|(_, p, m, f)| (*p, *m, *f))
}

/// Whether a setting can move this reason (its group is [`Group::Tunable`]).
pub fn tunable(name: &str) -> bool {
    info(name).group == Group::Tunable
}
