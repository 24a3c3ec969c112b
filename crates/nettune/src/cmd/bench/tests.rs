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
