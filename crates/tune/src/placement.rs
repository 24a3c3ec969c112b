//! IRQ placement as pure functions: which physical cores may take queue IRQs
//! ([`physical_cores`]) and which core each queue gets ([`assign`]).

use model::snapshot::{Cpu, NumaNode};
use model::CpuSet;
use std::collections::{BTreeMap, BTreeSet};

/// A physical core, named by the CPU that stands for it, and its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Core {
    /// The lowest usable SMT thread of the core.
    pub cpu: u32,
    /// NUMA node of the core.
    pub node: u32,
}

/// One representative CPU per physical core (the lowest usable SMT thread),
/// ascending. A core with a reserved (excluded or isolated) thread is left
/// out whole: an IRQ on the sibling would share the application's core.
pub fn physical_cores(
    cpus: &[Cpu],
    nodes: &[NumaNode],
    usable: &CpuSet,
    reserved: &CpuSet,
) -> Vec<Core> {
    let mut seen: BTreeSet<u32> = BTreeSet::new();
    let mut out = Vec::new();
    for c in cpus {
        let id = c.id.0;
        if !usable.contains(id) || seen.contains(&id) {
            continue;
        }
        let mut sib = c.siblings.clone();
        sib.insert(id);
        for s in sib.iter() {
            seen.insert(s);
        }
        if !sib.intersection(reserved).is_empty() {
            continue;
        }
        let rep = sib.intersection(usable).first().unwrap_or(id);
        let node = c
            .node
            .map(|n| n.0)
            .or_else(|| nodes.iter().find(|n| n.cpus.contains(id)).map(|n| n.id.0))
            .unwrap_or(0);
        out.push(Core { cpu: rep, node });
    }
    out.sort_by_key(|c| c.cpu);
    out
}

/// The representative CPUs of the cores of `node`, ascending.
pub fn node_cores(cores: &[Core], node: u32) -> Vec<u32> {
    cores
        .iter()
        .filter(|c| c.node == node)
        .map(|c| c.cpu)
        .collect()
}

/// Nodes ordered by distance from `from` (then id). A node without a
/// distance row counts 10 to itself and 20 to the others.
pub fn nodes_by_distance(nodes: &[NumaNode], from: u32) -> Vec<u32> {
    let idx = nodes.iter().position(|n| n.id.0 == from);
    let mut v: Vec<(u32, u32)> = nodes
        .iter()
        .map(|n| {
            let d = idx
                .and_then(|i| n.distances.get(i).copied())
                .unwrap_or(if n.id.0 == from { 10 } else { 20 });
            (d, n.id.0)
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

/// Which nodes an interface's queues go to, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeOrder {
    /// The NIC's node is known: fill it first, then spill to the next nodes
    /// of the list (nearest first, the home node at its head).
    Nearest(Vec<u32>),
    /// The NIC's node is unknown: one queue per node in turn.
    Spread(Vec<u32>),
}

impl NodeOrder {
    /// The nodes in order; node 0 when there are none (a snapshot without
    /// NUMA information).
    fn nodes(&self) -> Vec<u32> {
        match self {
            NodeOrder::Nearest(v) | NodeOrder::Spread(v) if v.is_empty() => vec![0],
            NodeOrder::Nearest(v) | NodeOrder::Spread(v) => v.clone(),
        }
    }
}

/// How many of `cores` lie on the nodes of `nodes`: fewer than the queues
/// means some cores take more than one.
pub fn capacity(cores: &[Core], nodes: &NodeOrder) -> usize {
    let distinct: BTreeSet<u32> = nodes.nodes().into_iter().collect();
    distinct.iter().map(|&nd| node_cores(cores, nd).len()).sum()
}

/// Queues already placed per node, across interfaces: a second NIC on the
/// same node takes the cores the first one left.
pub type NodeUsage = BTreeMap<u32, usize>;

/// Where a queue's IRQs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// The CPU (the representative of a physical core).
    pub cpu: u32,
    /// Its node.
    pub node: u32,
}

/// Place `queues` (queue indices, in order) on `cores`.
///
/// Each node's cores are taken in order, continuing where earlier interfaces
/// (`used`) stopped; a full node spills to the next one of `nodes`. With more
/// queues than cores in `nodes`, cores take several queues (round robin per
/// node); when every core already has a queue from other interfaces, queues
/// wrap over all cores. No cores at all: nothing is placed. `used` is updated
/// with what this call placed.
pub fn assign(
    queues: &[u32],
    cores: &[Core],
    nodes: &NodeOrder,
    used: &mut NodeUsage,
) -> BTreeMap<u32, Placed> {
    let mut placement = BTreeMap::new();
    if cores.is_empty() {
        return placement;
    }
    let n = queues.len();
    let order = nodes.nodes();
    let pools: BTreeMap<u32, Vec<u32>> = order
        .iter()
        .map(|&nd| (nd, node_cores(cores, nd)))
        .collect();
    let total = capacity(cores, nodes);
    // The next core of node `nd`, or None when it is full (and there are
    // enough cores overall that no core needs two queues).
    let pick = |nd: u32, used: &NodeUsage| -> Option<u32> {
        let pool = pools.get(&nd)?;
        if pool.is_empty() {
            return None;
        }
        let u = used.get(&nd).copied().unwrap_or(0);
        if u < pool.len() || total < n {
            Some(pool[u % pool.len()])
        } else {
            None
        }
    };
    let mut next_node = 0usize;
    for (qi, &q) in queues.iter().enumerate() {
        let mut chosen = None;
        match nodes {
            NodeOrder::Nearest(_) => {
                for &nd in &order {
                    if let Some(c) = pick(nd, used) {
                        chosen = Some((c, nd));
                        break;
                    }
                }
            }
            NodeOrder::Spread(_) => {
                for k in 0..order.len() {
                    let nd = order[(next_node + k) % order.len()];
                    if let Some(c) = pick(nd, used) {
                        chosen = Some((c, nd));
                        next_node = (next_node + k + 1) % order.len();
                        break;
                    }
                }
            }
        }
        let (cpu, node) = chosen.unwrap_or_else(|| {
            // Every core already has a queue (other NICs): wrap.
            let c = cores[qi % cores.len()];
            (c.cpu, c.node)
        });
        *used.entry(node).or_insert(0) += 1;
        placement.insert(q, Placed { cpu, node });
    }
    placement
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{CpuId, NodeId};

    /// `n` CPUs; CPU i has sibling i + n/2 when `smt`; nodes split the cores in halves.
    fn cpus(n: u32, smt: bool, nodes: u32) -> (Vec<Cpu>, Vec<NumaNode>) {
        let cores = if smt { n / 2 } else { n };
        let per_node = cores / nodes;
        let node_of = |id: u32| (id % cores) / per_node;
        let cpus = (0..n)
            .map(|id| {
                let core = id % cores;
                let mut siblings = CpuSet::single(core);
                if smt {
                    siblings.insert(core + cores);
                }
                Cpu {
                    id: CpuId(id),
                    online: true,
                    core_id: Some(core),
                    package: Some(node_of(id)),
                    node: Some(NodeId(node_of(id))),
                    siblings,
                    governor: None,
                }
            })
            .collect();
        let nodes = (0..nodes)
            .map(|nd| NumaNode {
                id: NodeId(nd),
                cpus: (0..n).filter(|&id| node_of(id) == nd).collect(),
                distances: (0..nodes).map(|o| if o == nd { 10 } else { 21 }).collect(),
                mem_total_kib: None,
            })
            .collect();
        (cpus, nodes)
    }

    fn cpus_of(p: &BTreeMap<u32, Placed>) -> Vec<u32> {
        p.values().map(|x| x.cpu).collect()
    }

    #[test]
    fn single_node_one_queue_per_core() {
        let (c, n) = cpus(4, false, 1);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 3), &CpuSet::new());
        let mut used = NodeUsage::new();
        let p = assign(&[0, 1, 2], &cores, &NodeOrder::Nearest(vec![0]), &mut used);
        assert_eq!(cpus_of(&p), [0, 1, 2]);
        assert_eq!(used.get(&0), Some(&3));
        // A second NIC continues where the first stopped; once every core
        // has a queue, its queue i wraps to core i.
        let p = assign(&[0, 1], &cores, &NodeOrder::Nearest(vec![0]), &mut used);
        assert_eq!(cpus_of(&p), [3, 1]);
    }

    #[test]
    fn two_nodes_fill_the_home_node_then_spill_to_the_nearest() {
        let (c, n) = cpus(8, false, 2);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 7), &CpuSet::new());
        let order = nodes_by_distance(&n, 1);
        assert_eq!(order, [1, 0]);
        let mut used = NodeUsage::new();
        let q: Vec<u32> = (0..6).collect();
        let p = assign(&q, &cores, &NodeOrder::Nearest(order), &mut used);
        assert_eq!(cpus_of(&p), [4, 5, 6, 7, 0, 1]);
        assert_eq!(p[&4].node, 0);
        assert_eq!((used[&0], used[&1]), (2, 4));
        // Unknown node: queues alternate between the nodes.
        let mut used = NodeUsage::new();
        let p = assign(&q, &cores, &NodeOrder::Spread(vec![0, 1]), &mut used);
        assert_eq!(cpus_of(&p), [0, 4, 1, 5, 2, 6]);
    }

    #[test]
    fn smt_siblings_are_skipped() {
        // 8 CPUs, cores 0-3, siblings 4-7.
        let (c, n) = cpus(8, true, 1);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 7), &CpuSet::new());
        assert_eq!(
            cores.iter().map(|c| c.cpu).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let mut used = NodeUsage::new();
        let p = assign(
            &[0, 1, 2, 3],
            &cores,
            &NodeOrder::Nearest(vec![0]),
            &mut used,
        );
        assert_eq!(cpus_of(&p), [0, 1, 2, 3]);
    }

    #[test]
    fn reserved_threads_take_their_whole_core_out() {
        let (c, n) = cpus(8, true, 1);
        // CPU 5 is reserved: core 1 (CPUs 1 and 5) is out. CPU 0 is not
        // usable (--cpus): its sibling 4 stands for core 0.
        let usable = CpuSet::parse_list("1-7").unwrap();
        let cores = physical_cores(&c, &n, &usable, &CpuSet::single(5));
        assert_eq!(cores.iter().map(|c| c.cpu).collect::<Vec<_>>(), [2, 3, 4]);
        let mut used = NodeUsage::new();
        let p = assign(&[0, 1, 2], &cores, &NodeOrder::Nearest(vec![0]), &mut used);
        assert_eq!(cpus_of(&p), [2, 3, 4]);
        // Every core has a reserved thread: nothing to place on, no panic.
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 3), &CpuSet::range(4, 7));
        assert!(cores.is_empty());
        let p = assign(&[0, 1], &cores, &NodeOrder::Nearest(vec![0]), &mut used);
        assert!(p.is_empty());
    }

    #[test]
    fn more_queues_than_cores_share_cores_round_robin() {
        let (c, n) = cpus(8, false, 2);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 7), &CpuSet::new());
        let mut used = NodeUsage::new();
        let q: Vec<u32> = (0..10).collect();
        let p = assign(&q, &cores, &NodeOrder::Nearest(vec![0, 1]), &mut used);
        // Fewer cores than queues: the home node takes every queue in turn.
        assert_eq!(cpus_of(&p), [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
        assert_eq!(used[&0], 10);
    }
}
