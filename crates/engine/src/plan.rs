//! Which workers each end of a test runs: a pure function of the
//! configuration and the end, shared by client and server, so the two can
//! never disagree about who sends, who receives and who measures.

use crate::config::catalogue::Grouping;
pub(crate) use crate::config::catalogue::Work;
use crate::config::{End, FlowDir, TestConfig};
use crate::report::Role;

/// The sockets a worker owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owns {
    /// These flows (their own sockets).
    Flows(Vec<u32>),
    /// Shared socket number `i` of the data port (udp-rr and tcp-crr servers).
    Shared(u32),
}

/// One worker of one end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerPlan {
    /// Role (and so whether it measures, and which stop flag it obeys).
    pub role: Role,
    /// Direction of its flows.
    pub dir: FlowDir,
    /// Workload.
    pub work: Work,
    /// Sockets.
    pub owns: Owns,
}

/// Items spread round-robin over at most `threads` groups (none empty).
pub(crate) fn spread<T>(items: Vec<T>, threads: u32) -> Vec<Vec<T>> {
    let t = (threads.max(1) as usize).min(items.len().max(1));
    let mut out: Vec<Vec<T>> = (0..t).map(|_| Vec::new()).collect();
    for (i, x) in items.into_iter().enumerate() {
        out[i % t].push(x);
    }
    out.retain(|v| !v.is_empty());
    out
}

/// The workers of `end`, in the order they are started (which is the order
/// of CPU pinning and of the report's worker list): forward flows first,
/// each direction's flows spread round-robin over at most `threads` workers;
/// a tcp-crr client takes one worker per flow; udp-rr and tcp-crr servers
/// one per shared socket (`threads` of them).
pub(crate) fn plan(cfg: &TestConfig, end: End) -> Vec<WorkerPlan> {
    let kind = cfg.test.spec();
    let fwd = kind.runs(end, FlowDir::Forward);
    if fwd.grouping == Grouping::Shared {
        let (role, work) = (fwd.role, fwd.work);
        return (0..cfg.threads.max(1))
            .map(|i| WorkerPlan {
                role,
                dir: FlowDir::Forward,
                work,
                owns: Owns::Shared(i),
            })
            .collect();
    }
    let mut out = Vec::new();
    for dir in [FlowDir::Forward, FlowDir::Reverse] {
        let flows: Vec<u32> = (0..cfg.total_flows())
            .filter(|f| cfg.flow_dir(*f) == dir)
            .collect();
        let r = kind.runs(end, dir);
        let (role, work) = (r.role, r.work);
        let groups = if r.grouping == Grouping::PerFlow {
            flows.into_iter().map(|f| vec![f]).collect()
        } else {
            spread(flows, cfg.threads)
        };
        out.extend(groups.into_iter().map(|g| WorkerPlan {
            role,
            dir,
            work,
            owns: Owns::Flows(g),
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::{measured_by, Direction, TestKind};

    fn configs() -> Vec<TestConfig> {
        let mut v = Vec::new();
        for test in TestKind::ALL {
            for direction in [Direction::Forward, Direction::Reverse, Direction::Bidir] {
                for (flows, threads) in [(1, 1), (3, 2), (4, 8)] {
                    let c = TestConfig {
                        test,
                        direction,
                        flows,
                        threads,
                        size: test.default_size(),
                        ..TestConfig::default()
                    };
                    if c.validate().is_ok() {
                        v.push(c);
                    }
                }
            }
        }
        v
    }

    fn flows_of(p: &WorkerPlan) -> &[u32] {
        match &p.owns {
            Owns::Flows(f) => f,
            Owns::Shared(_) => &[],
        }
    }

    #[test]
    fn every_kind_direction_and_end_is_covered() {
        let cs = configs();
        // Every kind runs forward; streams also reverse and bidir.
        let streams = TestKind::ALL.iter().filter(|t| t.is_stream()).count();
        let others = TestKind::ALL.len() - streams;
        assert_eq!(cs.len(), (streams * 3 + others) * 3, "{cs:#?}");
        for c in &cs {
            for end in [End::Client, End::Server] {
                let p = plan(c, end);
                assert!(!p.is_empty(), "{c:?} {end:?}");
                let shared = p.iter().any(|w| matches!(w.owns, Owns::Shared(_)));
                let mut seen: Vec<u32> = p.iter().flat_map(|w| flows_of(w).to_vec()).collect();
                seen.sort_unstable();
                if shared {
                    // One worker per shared socket, all on one data port.
                    assert!(seen.is_empty());
                    assert_eq!(p.len() as u32, c.threads);
                    assert!(p
                        .iter()
                        .enumerate()
                        .all(|(i, w)| w.owns == Owns::Shared(i as u32)));
                } else {
                    // Each flow exactly once, with its direction.
                    assert_eq!(
                        seen,
                        (0..c.total_flows()).collect::<Vec<_>>(),
                        "{c:?} {end:?}"
                    );
                    for w in &p {
                        assert!(flows_of(w).iter().all(|f| c.flow_dir(*f) == w.dir));
                    }
                }
                for dir in c.dirs() {
                    let n = p.iter().filter(|w| w.dir == dir).count() as u32;
                    if c.test.spec().runs(end, dir).grouping == Grouping::PerFlow {
                        assert_eq!(n, c.flows);
                    } else {
                        assert!(n >= 1 && n <= c.threads.max(1), "{c:?} {end:?} {dir:?}");
                    }
                }
                // Forward workers are started before reverse ones.
                let first_rev = p.iter().position(|w| w.dir == FlowDir::Reverse);
                if let Some(i) = first_rev {
                    assert!(p[i..].iter().all(|w| w.dir == FlowDir::Reverse));
                }
            }
        }
    }

    #[test]
    fn each_direction_is_measured_by_one_end_and_driven_by_the_other() {
        for c in configs() {
            for dir in c.dirs() {
                let by = measured_by(c.test, dir);
                let other = if by == End::Client {
                    End::Server
                } else {
                    End::Client
                };
                let m = plan(&c, by);
                let o = plan(&c, other);
                let ws = |p: &[WorkerPlan]| -> Vec<Role> {
                    p.iter().filter(|w| w.dir == dir).map(|w| w.role).collect()
                };
                assert!(ws(&m).iter().all(|r| r.measures()), "{c:?} {dir:?}");
                assert!(ws(&o).iter().all(|r| !r.measures()), "{c:?} {dir:?}");
                // The active side (sender, requester) is the one that
                // starts the traffic; the other end is passive.
                let active = |r: &Role| matches!(r, Role::Send | Role::Request);
                let actives = ws(&m).iter().filter(|r| active(r)).count()
                    + ws(&o).iter().filter(|r| active(r)).count();
                assert_eq!(
                    actives,
                    if c.test.is_stream() {
                        ws(&o).len()
                    } else {
                        ws(&m).len()
                    }
                );
            }
        }
    }

    #[test]
    fn workloads_follow_kind_end_and_direction() {
        use Work::*;
        let cases = [
            (
                TestKind::TcpStream,
                Direction::Bidir,
                End::Client,
                vec![TcpSend, TcpRecv],
            ),
            (
                TestKind::TcpStream,
                Direction::Bidir,
                End::Server,
                vec![TcpRecv, TcpSend],
            ),
            (
                TestKind::UdpStream,
                Direction::Reverse,
                End::Client,
                vec![UdpRecv],
            ),
            (
                TestKind::UdpStream,
                Direction::Reverse,
                End::Server,
                vec![UdpSend],
            ),
            (
                TestKind::UdpStream,
                Direction::Forward,
                End::Client,
                vec![UdpSend],
            ),
            (
                TestKind::UdpStream,
                Direction::Forward,
                End::Server,
                vec![UdpRecv],
            ),
            (
                TestKind::TcpRr,
                Direction::Forward,
                End::Client,
                vec![TcpRrClient],
            ),
            (
                TestKind::TcpRr,
                Direction::Forward,
                End::Server,
                vec![TcpRrServer],
            ),
            (
                TestKind::UdpRr,
                Direction::Forward,
                End::Client,
                vec![UdpRrClient],
            ),
            (
                TestKind::UdpRr,
                Direction::Forward,
                End::Server,
                vec![UdpRrServer],
            ),
            (
                TestKind::TcpCrr,
                Direction::Forward,
                End::Client,
                vec![CrrClient],
            ),
            (
                TestKind::TcpCrr,
                Direction::Forward,
                End::Server,
                vec![CrrServer],
            ),
        ];
        for (test, direction, end, want) in cases {
            let c = TestConfig {
                test,
                direction,
                size: test.default_size(),
                ..TestConfig::default()
            };
            let got: Vec<Work> = plan(&c, end).iter().map(|w| w.work).collect();
            assert_eq!(got, want, "{test:?} {direction:?} {end:?}");
        }
        // Bidir, 2 flows each way over 2 threads: flows 0,1 forward, 2,3 reverse.
        let c = TestConfig {
            test: TestKind::TcpStream,
            direction: Direction::Bidir,
            flows: 2,
            threads: 2,
            ..TestConfig::default()
        };
        let p = plan(&c, End::Client);
        let got: Vec<(Role, FlowDir, &[u32])> =
            p.iter().map(|w| (w.role, w.dir, flows_of(w))).collect();
        assert_eq!(
            got,
            vec![
                (Role::Send, FlowDir::Forward, &[0][..]),
                (Role::Send, FlowDir::Forward, &[1][..]),
                (Role::Recv, FlowDir::Reverse, &[2][..]),
                (Role::Recv, FlowDir::Reverse, &[3][..]),
            ]
        );
    }

    #[test]
    fn spread_round_robin() {
        assert_eq!(
            spread(vec![0, 1, 2, 3, 4], 2),
            vec![vec![0, 2, 4], vec![1, 3]]
        );
        assert_eq!(spread(vec![0], 4), vec![vec![0]]);
        assert!(spread(Vec::<u32>::new(), 4).is_empty());
    }
}
