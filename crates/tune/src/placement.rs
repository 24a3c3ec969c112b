//! IRQ placement as pure functions: which physical cores may take queue IRQs
//! ([`physical_cores`]) and which core each queue of every NIC gets
//! ([`allocate`]).

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
    /// Another usable SMT thread of the core, taken for a second queue when
    /// a NIC has more queues than its node has cores (two threads beat two
    /// queues on one CPU).
    pub sibling: Option<u32>,
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
        let threads = sib.intersection(usable);
        let rep = threads.first().unwrap_or(id);
        let sibling = threads.iter().find(|&t| t != rep);
        let node = c
            .node
            .map(|n| n.0)
            .or_else(|| nodes.iter().find(|n| n.cpus.contains(id)).map(|n| n.id.0))
            .unwrap_or(0);
        out.push(Core {
            cpu: rep,
            node,
            sibling,
        });
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

/// Where a queue's IRQs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// The CPU (the representative of a physical core).
    pub cpu: u32,
    /// Its node.
    pub node: u32,
}

/// One interface's demand for cores: its queues, its node and its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// Queue indices, ascending.
    pub queues: Vec<u32>,
    /// The NIC's node when known and present; `None` spreads the queues
    /// over the nodes in turn.
    pub home: Option<u32>,
    /// How much the NIC's traffic weighs against the others' (0 for a link
    /// that is down): heavier NICs choose cores first and lighter ones share
    /// the least loaded of what is left.
    pub weight: u64,
}

/// Where one interface's queues went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allotment {
    /// Queue index -> where its IRQs go.
    pub placed: BTreeMap<u32, Placed>,
    /// The nodes whose cores the queues were placed on, in order.
    pub pool_nodes: Vec<u32>,
    /// Physical cores in the pool (fewer than the queues: some cores take
    /// several queues of this NIC).
    pub pool_cores: usize,
    /// The home node has no usable core: the queues went to `pool_nodes`.
    pub off_home: bool,
    /// Cores this NIC shares with heavier NICs placed before it.
    pub shared: usize,
}

/// The cores a NIC's queues may use: its node's, else (no usable core there)
/// the nearest node that has some; all cores, nodes interleaved, when the
/// node is unknown.
fn pool(cores: &[Core], nodes: &[NumaNode], home: Option<u32>) -> (Vec<u32>, Vec<u32>, bool) {
    match home {
        Some(h) => {
            for nd in nodes_by_distance(nodes, h) {
                let c = node_cores(cores, nd);
                if !c.is_empty() {
                    return (c, vec![nd], nd != h);
                }
            }
            // A node list without the home node (or no nodes): all cores.
            (cores.iter().map(|c| c.cpu).collect(), vec![h], false)
        }
        None => {
            let mut per: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for c in cores {
                per.entry(c.node).or_default().push(c.cpu);
            }
            let longest = per.values().map(Vec::len).max().unwrap_or(0);
            let mut out = Vec::with_capacity(cores.len());
            for i in 0..longest {
                for v in per.values() {
                    if let Some(&c) = v.get(i) {
                        out.push(c);
                    }
                }
            }
            (out, per.keys().copied().collect(), false)
        }
    }
}

/// Place the queues of every NIC at once.
///
/// NICs choose in order of weight (heaviest first, then the order given).
/// A NIC's queues stay on its node: when the node has fewer cores than the
/// queues, cores take several queues of it (stacked locally: the second
/// round on the cores' other SMT threads) rather than a remote node; a node without usable cores sends them to the nearest node
/// that has some. Each NIC takes the least loaded cores of its pool (load:
/// the weight per queue of what heavier NICs put there), so a busy NIC never
/// yields local cores to an idle or down one. Queue `i` goes to the `i`-th
/// chosen core in the pool's order. No cores at all: nothing is placed.
pub fn allocate(demands: &[Demand], cores: &[Core], nodes: &[NumaNode]) -> Vec<Allotment> {
    let mut out = vec![Allotment::default(); demands.len()];
    if cores.is_empty() {
        return out;
    }
    let node_of: BTreeMap<u32, u32> = cores.iter().map(|c| (c.cpu, c.node)).collect();
    let sibling_of: BTreeMap<u32, u32> = cores
        .iter()
        .filter_map(|c| c.sibling.map(|s| (c.cpu, s)))
        .collect();
    // cpu -> (weighted load, queues)
    let mut load: BTreeMap<u32, (u64, usize)> = BTreeMap::new();
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by(|&a, &b| demands[b].weight.cmp(&demands[a].weight).then(a.cmp(&b)));
    for ix in order {
        let d = &demands[ix];
        if d.queues.is_empty() {
            continue;
        }
        let (pool, pool_nodes, off_home) = pool(cores, nodes, d.home);
        if pool.is_empty() {
            continue;
        }
        let n = d.queues.len();
        let per_queue = d.weight / u64::try_from(n).unwrap_or(u64::MAX).max(1);
        let chosen: Vec<u32> = if n >= pool.len() {
            pool.clone()
        } else {
            let mut ranked: Vec<(usize, u32)> = pool.iter().copied().enumerate().collect();
            ranked.sort_by_key(|&(pos, c)| {
                let (w, q) = load.get(&c).copied().unwrap_or((0, 0));
                (w, q, pos)
            });
            let mut pick: Vec<(usize, u32)> = ranked.into_iter().take(n).collect();
            pick.sort_by_key(|&(pos, _)| pos);
            pick.into_iter().map(|(_, c)| c).collect()
        };
        let shared = chosen.iter().filter(|c| load.contains_key(c)).count();
        let a = &mut out[ix];
        for (i, &q) in d.queues.iter().enumerate() {
            let core = chosen[i % chosen.len()];
            let node = node_of.get(&core).copied().unwrap_or(0);
            // The second round of a NIC with more queues than cores goes to
            // the cores' other SMT threads; later rounds share CPUs.
            let cpu = match sibling_of.get(&core) {
                Some(&s) if i / chosen.len() % 2 == 1 => s,
                _ => core,
            };
            let e = load.entry(core).or_insert((0, 0));
            e.0 = e.0.saturating_add(per_queue);
            e.1 = e.1.saturating_add(1);
            a.placed.insert(q, Placed { cpu, node });
        }
        a.pool_nodes = pool_nodes;
        a.pool_cores = pool.len();
        a.off_home = off_home;
        a.shared = shared;
    }
    out
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

    fn demand(q: u32, home: Option<u32>, weight: u64) -> Demand {
        Demand {
            queues: (0..q).collect(),
            home,
            weight,
        }
    }

    #[test]
    fn single_node_one_queue_per_core() {
        let (c, n) = cpus(4, false, 1);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 3), &CpuSet::new());
        let a = allocate(&[demand(3, Some(0), 10)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [0, 1, 2]);
        // A second, lighter NIC takes the free core first, then shares the
        // least loaded ones; its queues stay on distinct cores.
        let a = allocate(&[demand(3, Some(0), 10), demand(2, Some(0), 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [0, 1, 2]);
        assert_eq!(cpus_of(&a[1].placed), [0, 3]);
        assert_eq!(a[1].shared, 1);
    }

    #[test]
    fn more_queues_than_the_home_node_has_cores_stack_locally() {
        let (c, n) = cpus(8, false, 2);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 7), &CpuSet::new());
        assert_eq!(nodes_by_distance(&n, 1), [1, 0]);
        let a = allocate(&[demand(6, Some(1), 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [4, 5, 6, 7, 4, 5]);
        assert!(a[0].placed.values().all(|p| p.node == 1));
        assert_eq!((a[0].pool_cores, a[0].off_home), (4, false));
        // Unknown node: queues alternate between the nodes.
        let a = allocate(&[demand(6, None, 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [0, 4, 1, 5, 2, 6]);
    }

    #[test]
    fn busy_nic_keeps_the_local_cores_whatever_the_order() {
        // Issue 17: idle and down NICs first in name order, the busy one last,
        // all on node 0 of two nodes with 4 cores each.
        let (c, n) = cpus(8, false, 2);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 7), &CpuSet::new());
        let a = allocate(
            &[
                demand(4, Some(0), 1),
                demand(4, Some(0), 0),
                demand(4, Some(0), 9_000_000),
            ],
            &cores,
            &n,
        );
        for x in &a {
            assert!(x.placed.values().all(|p| p.node == 0), "{a:?}");
        }
        assert_eq!(cpus_of(&a[2].placed), [0, 1, 2, 3]);
        assert_eq!(a[2].shared, 0);
        assert_eq!(a[0].shared, 4);
    }

    #[test]
    fn home_node_without_usable_cores_goes_to_the_nearest() {
        let (c, n) = cpus(8, false, 2);
        // Node 1 (CPUs 4-7) all reserved.
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 7), &CpuSet::range(4, 7));
        let a = allocate(&[demand(2, Some(1), 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [0, 1]);
        assert!(a[0].off_home);
    }

    #[test]
    fn a_second_round_of_queues_takes_the_other_smt_threads() {
        // 8 CPUs, cores 0-3, siblings 4-7; 10 queues: 0-3, then 4-7, then 0-1.
        let (c, n) = cpus(8, true, 1);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 7), &CpuSet::new());
        let a = allocate(&[demand(10, Some(0), 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]);
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
        let a = allocate(&[demand(4, Some(0), 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [0, 1, 2, 3]);
    }

    #[test]
    fn reserved_threads_take_their_whole_core_out() {
        let (c, n) = cpus(8, true, 1);
        // CPU 5 is reserved: core 1 (CPUs 1 and 5) is out. CPU 0 is not
        // usable (--cpus): its sibling 4 stands for core 0.
        let usable = CpuSet::parse_list("1-7").unwrap();
        let cores = physical_cores(&c, &n, &usable, &CpuSet::single(5));
        assert_eq!(cores.iter().map(|c| c.cpu).collect::<Vec<_>>(), [2, 3, 4]);
        let a = allocate(&[demand(3, Some(0), 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [2, 3, 4]);
        // Every core has a reserved thread: nothing to place on, no panic.
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 3), &CpuSet::range(4, 7));
        assert!(cores.is_empty());
        let a = allocate(&[demand(2, Some(0), 1)], &cores, &n);
        assert!(a[0].placed.is_empty());
    }

    #[test]
    fn more_queues_than_cores_share_cores_round_robin() {
        let (c, n) = cpus(4, false, 1);
        let cores = physical_cores(&c, &n, &CpuSet::range(0, 3), &CpuSet::new());
        let a = allocate(&[demand(10, Some(0), 1)], &cores, &n);
        assert_eq!(cpus_of(&a[0].placed), [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
    }
}
