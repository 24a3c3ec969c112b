#![allow(clippy::unwrap_used)]
//! Flag parsing of `nettune bench`.
use clap::Parser;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    args: super::Args,
}

fn parse(args: &[&str]) -> Result<super::Args, clap::Error> {
    Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.args)
}

/// `--rate` takes the link-rate spellings `lab --rate` takes (it used to
/// refuse `1gbit`), and the size flags the binary suffixes.
#[test]
fn rate_and_sizes_use_the_shared_parsers() {
    let a = parse(&["h", "--rate", "1gbit"]).unwrap();
    assert_eq!(a.rate, Some(1e9));
    assert_eq!(parse(&["h", "--rate", "20k"]).unwrap().rate, Some(2e4));
    assert_eq!(parse(&["h", "--rate", "10G"]).unwrap().rate, Some(1e10));
    assert!(parse(&["h", "--rate", "fast"]).is_err());
    let a = parse(&["h", "--sndbuf", "4M"]).unwrap();
    assert_eq!(a.sndbuf, Some(4 << 20));
    assert!(parse(&["h", "--sndbuf", "1.5M"]).is_err());
}

/// `bench -d 2s` was refused ("invalid float literal"): every duration
/// flag takes the shared parser (a plain number is seconds).
#[test]
fn durations_take_units() {
    let a = parse(&[
        "h",
        "-d",
        "2s",
        "-O",
        "500ms",
        "-i",
        "1m",
        "--connect-timeout",
        "2",
    ])
    .unwrap();
    assert_eq!(
        (a.duration, a.warmup, a.interval, a.connect_timeout),
        (2.0, 0.5, 60.0, 2.0)
    );
    let a = parse(&["h"]).unwrap();
    assert_eq!((a.duration, a.warmup, a.interval), (10.0, 1.0, 1.0));
    assert!(parse(&["h", "-d", "2x"]).is_err());
    assert!(parse(&["h", "-d", "-1"]).is_err());
}

fn cfg(args: &[&str]) -> anyhow::Result<engine::config::TestConfig> {
    let a = parse(args).map_err(|e| anyhow::anyhow!("{e}"))?;
    super::config(&a, &host::Root::new("/"))
}

/// iperf3's letters parse to nettune's flags; `-t` stays the test.
#[test]
fn iperf3_letters() {
    let a = parse(&["h", "-P", "2", "-J", "-t", "tcp-stream"]).unwrap();
    assert_eq!(a.flows, 2);
    assert!(a.json);
    assert_eq!(a.test.as_deref(), Some("tcp-stream"));
    let a = parse(&["h", "-B", "127.0.0.2", "-O", "2", "-C", "cubic", "-Z", "-R"]).unwrap();
    assert_eq!(a.bind, Some("127.0.0.2".parse().unwrap()));
    assert_eq!(a.warmup, 2.0);
    assert_eq!(a.congestion.as_deref(), Some("cubic"));
    assert!(a.zerocopy && a.reverse);
    let c = cfg(&["h", "-P", "2", "-J", "-O", "2", "-C", "cubic", "-Z", "-R"]).unwrap();
    assert_eq!((c.flows, c.warmup_ms), (2, 2000));
    assert_eq!(c.direction, engine::config::Direction::Reverse);
    assert!(c.zerocopy);
    assert_eq!(c.congestion.as_deref(), Some("cubic"));
    // The long forms and the existing short ones still work.
    let a = parse(&[
        "h", "--flows", "3", "--json", "-p", "7", "-d", "5", "-i", "2", "-4",
    ])
    .unwrap();
    assert_eq!((a.flows, a.port, a.duration, a.interval), (3, 7, 5.0, 2.0));
    assert!(a.json && a.ipv4);
    assert_eq!(
        cfg(&["h"]).unwrap().test,
        engine::config::TestKind::TcpStream
    );
}

/// `-u` selects udp-stream, accepts a UDP `--test`, and refuses a TCP one.
#[test]
fn udp_flag_selects_udp_stream() {
    use engine::config::TestKind;
    assert_eq!(cfg(&["h", "-u"]).unwrap().test, TestKind::UdpStream);
    assert_eq!(cfg(&["h", "--udp"]).unwrap().test, TestKind::UdpStream);
    assert_eq!(
        cfg(&["h", "-u", "-t", "udp-rr"]).unwrap().test,
        TestKind::UdpRr
    );
    let e = cfg(&["h", "-u", "-t", "tcp-rr"]).unwrap_err().to_string();
    assert!(
        e.contains("-u") && e.contains("tcp-rr is a TCP test"),
        "{e}"
    );
    assert!(e.contains("udp-stream and udp-rr"), "{e}");
}

/// `-b` is iperf3's per-stream rate: times the flows, 0 unlimited, and it
/// excludes `--rate`; both take the same parser.
#[test]
fn bitrate_is_per_flow() {
    assert_eq!(cfg(&["h", "-b", "1gbit"]).unwrap().rate, Some(1e9));
    assert_eq!(cfg(&["h", "--rate", "1gbit"]).unwrap().rate, Some(1e9));
    assert_eq!(cfg(&["h", "-P", "2", "-b", "1G"]).unwrap().rate, Some(2e9));
    assert_eq!(
        cfg(&["h", "-P", "2", "--rate", "1G"]).unwrap().rate,
        Some(1e9)
    );
    assert_eq!(cfg(&["h", "-b", "0"]).unwrap().rate, None);
    assert!(parse(&["h", "-b", "1G", "--rate", "1G"]).is_err());
    assert!(parse(&["h", "-b", "fast"]).is_err());
}

/// `-l` means different things to iperf3 and netperf: a usage error naming both.
#[test]
fn length_flag_gives_the_hint() {
    for args in [&["h", "-l", "64"][..], &["h", "-l"], &["h", "-l", "-5"]] {
        let e = parse(args).unwrap_err();
        assert_eq!(
            e.kind(),
            clap::error::ErrorKind::ValueValidation,
            "{args:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("--size") && text.contains("--duration"),
            "{text}"
        );
    }
}

/// Issue 38: iperf3's `-t 10` is the time; here `-t` is the test, so a
/// number there says to use `-d`.
#[test]
fn a_number_for_the_test_points_to_duration() {
    let e = parse(&["h", "-t", "10"]).unwrap_err().to_string();
    assert!(e.contains("-d 10"), "{e}");
    assert!(e.contains("tcp-stream"), "{e}");
    let e = parse(&["h", "-t", "tcp-strem"]).unwrap_err().to_string();
    assert!(!e.contains("-d tcp-strem"), "{e}");
    assert_eq!(
        parse(&["h", "-t", "tcp-rr"]).unwrap().test.as_deref(),
        Some("tcp-rr")
    );
}
