//! Encoders and decoders on bytes, both byte orders.

use super::codec::*;
use super::*;
use model::snapshot::Feature;

#[test]
fn attrs_roundtrip_and_padding() {
    let mut a = AttrBuf::default();
    a.put_str(2, "eth0").put_u32(9, 4).put(11, &[1]);
    assert_eq!(a.bytes().len() % 4, 0);
    let got: Vec<(u16, Vec<u8>)> = attrs(a.bytes()).map(|(t, p)| (t, p.to_vec())).collect();
    assert_eq!(got[0], (2, b"eth0\0".to_vec()));
    assert_eq!(Endian::NATIVE.u32(&got[1].1), Some(4));
    assert_eq!(got[2], (11, vec![1]));
    // Truncated buffers stop iteration instead of panicking.
    let b = a.bytes();
    for cut in 0..b.len() {
        let _ = attrs(&b[..cut]).count();
    }
    assert_eq!(attrs(&[0xff, 0xff, 0, 0]).count(), 0);
}

#[test]
fn channels_rings_coalesce() {
    let mut a = AttrBuf::default();
    a.put_u32(5, 2).put_u32(9, 2);
    let c = parse_channels(a.bytes());
    assert_eq!((c.combined, c.combined_max, c.rx), (Some(2), Some(2), None));
    let mut r = AttrBuf::default();
    r.put_u32(2, 4096)
        .put_u32(6, 512)
        .put_u32(5, 4096)
        .put_u32(9, 256);
    let r = parse_rings(r.bytes());
    assert_eq!(
        (r.rx, r.rx_max, r.tx, r.tx_max),
        (Some(512), Some(4096), Some(256), Some(4096))
    );
    let mut co = AttrBuf::default();
    co.put_u32(2, 50).put(11, &[1]).put_u32(99, 7);
    let co = parse_coalesce(co.bytes());
    assert_eq!(co.get("rx-usecs"), Some(&50));
    assert_eq!(co.get("adaptive-rx"), Some(&1));
    assert_eq!(co.len(), 2);
}

#[test]
fn features_from_compact_bitsets() {
    let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let bits = |v: u8| {
        let mut b = AttrBuf::default();
        b.put_u32(eth::BITSET_SIZE, 3)
            .put(eth::BITSET_VALUE, &Endian::NATIVE.u32_bytes(u32::from(v)));
        b
    };
    let mut a = AttrBuf::default();
    a.nest(eth::FEATURES_HW, &bits(0b011))
        .nest(eth::FEATURES_ACTIVE, &bits(0b101))
        .nest(eth::FEATURES_NOCHANGE, &bits(0b010));
    let f = parse_features(a.bytes(), &names);
    assert_eq!(
        f["a"],
        Feature {
            active: true,
            fixed: false
        }
    );
    assert_eq!(
        f["b"],
        Feature {
            active: false,
            fixed: true
        }
    );
    assert_eq!(
        f["c"],
        Feature {
            active: true,
            fixed: true
        }
    );
}

#[test]
fn strset() {
    let mut s0 = AttrBuf::default();
    s0.put_u32(eth::STRING_INDEX, 1)
        .put_str(eth::STRING_VALUE, "rx-gro");
    let mut strings = AttrBuf::default();
    strings.nest(eth::STRINGS_STRING, &s0);
    let mut set = AttrBuf::default();
    set.put_u32(eth::STRINGSET_ID, 4)
        .nest(eth::STRINGSET_STRINGS, &strings);
    let mut sets = AttrBuf::default();
    sets.nest(eth::STRINGSETS_STRINGSET, &set);
    let mut a = AttrBuf::default();
    a.nest(eth::STRSET_STRINGSETS, &sets);
    assert_eq!(
        parse_strset(a.bytes()),
        vec![String::new(), "rx-gro".to_string()]
    );
    assert!(parse_strset(&[]).is_empty());
}

/// A CHANNELS_GET reply as a big-endian kernel (s390x, ppc64) sends it:
/// `combined_max` (5) = 2 and `combined` (9) = 2, written out by hand.
const BE_CHANNELS: [u8; 16] = [
    0, 8, 0, 5, 0, 0, 0, 2, // len 8, type 5, u32 2
    0, 8, 0, 9, 0, 0, 0, 2, // len 8, type 9, u32 2
];

#[test]
fn big_endian_capture_decodes() {
    let c = Decoder(Endian::Big).channels(&BE_CHANNELS);
    assert_eq!((c.combined, c.combined_max, c.rx), (Some(2), Some(2), None));
    // The same bytes read little-endian are garbage: the order matters.
    let wrong = Decoder(Endian::Little).channels(&BE_CHANNELS);
    assert_eq!(wrong.combined, None);
    // A little-endian host builds and decodes its own order.
    let mut le = AttrBuf::with_endian(Endian::Little);
    le.put_u32(5, 2).put_u32(9, 2);
    assert_eq!(Decoder(Endian::Little).channels(le.bytes()), c);
    let mut be = AttrBuf::with_endian(Endian::Big);
    be.put_u32(5, 2).put_u32(9, 2);
    assert_eq!(be.bytes(), BE_CHANNELS);
}

#[test]
fn big_endian_bitsets_are_u32_words() {
    // 34 features; bits 0 and 33 active. ethnl_put_bitset32 sends u32
    // words in host order: on big-endian bit 0 is in the 4th byte.
    let names: Vec<String> = (0..34).map(|i| format!("f{i}")).collect();
    let bits = |words: [u32; 2], e: Endian| {
        let mut v = Vec::new();
        for w in words {
            v.extend_from_slice(&e.u32_bytes(w));
        }
        let mut b = AttrBuf::with_endian(e);
        b.put_u32(eth::BITSET_SIZE, 34).put(eth::BITSET_VALUE, &v);
        b
    };
    for e in [Endian::Big, Endian::Little] {
        let mut a = AttrBuf::with_endian(e);
        a.nest(eth::FEATURES_HW, &bits([u32::MAX, 3], e))
            .nest(eth::FEATURES_ACTIVE, &bits([1, 2], e))
            .nest(eth::FEATURES_NOCHANGE, &bits([0, 0], e));
        let f = Decoder(e).features(a.bytes(), &names);
        let on: Vec<&str> = f
            .iter()
            .filter(|(_, v)| v.active)
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(on, ["f0", "f33"], "{e:?}");
        assert!(f.values().all(|v| !v.fixed), "{e:?}");
    }
    // The raw big-endian bytes of the ACTIVE words, by hand.
    let mut be = AttrBuf::with_endian(Endian::Big);
    be.put_u32(eth::BITSET_SIZE, 34)
        .put(eth::BITSET_VALUE, &[0, 0, 0, 1, 0, 0, 0, 2]);
    let mut a = AttrBuf::with_endian(Endian::Big);
    a.nest(eth::FEATURES_ACTIVE, &be);
    let f = Decoder(Endian::Big).features(a.bytes(), &names);
    assert!(f["f0"].active && f["f33"].active && !f["f1"].active && !f["f24"].active);
}

#[test]
fn big_endian_messages_and_errors() {
    let be = Decoder(Endian::Big);
    // An NLMSG_ERROR carrying -EOPNOTSUPP, as a big-endian kernel sends it.
    let mut err = vec![0, 0, 0, 36, 0, 2, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0];
    err.extend_from_slice(&(-95i32).to_be_bytes());
    err.extend_from_slice(&[0; 16]);
    assert_eq!(be.reply(&err, 7), Some(Err(NlError::Errno(95))));
    assert_eq!(be.reply(&err, 8), None);
    let ok = be.message(0x1c, 0, 9, &BE_CHANNELS);
    assert_eq!(&ok[..4], &[0, 0, 0, 32]);
    assert_eq!(be.reply(&ok, 9), Some(Ok(BE_CHANNELS.to_vec())));
    // A length past the datagram is malformed, not a panic.
    let mut cut = ok.clone();
    cut.truncate(20);
    assert!(matches!(
        be.reply(&cut, 9),
        Some(Err(NlError::Malformed(_)))
    ));
    for n in 0..ok.len() {
        let _ = Decoder(Endian::Little).reply(&ok[..n], 9);
    }
}

#[test]
fn big_endian_strset_rings_coalesce() {
    let e = Endian::Big;
    let mut s0 = AttrBuf::with_endian(e);
    s0.put_u32(eth::STRING_INDEX, 1)
        .put_str(eth::STRING_VALUE, "rx-gro");
    let mut strings = AttrBuf::with_endian(e);
    strings.nest(eth::STRINGS_STRING, &s0);
    let mut set = AttrBuf::with_endian(e);
    set.put_u32(eth::STRINGSET_ID, 4)
        .nest(eth::STRINGSET_STRINGS, &strings);
    let mut sets = AttrBuf::with_endian(e);
    sets.nest(eth::STRINGSETS_STRINGSET, &set);
    let mut a = AttrBuf::with_endian(e);
    a.nest(eth::STRSET_STRINGSETS, &sets);
    assert_eq!(Decoder(e).strset(a.bytes()), ["", "rx-gro"]);
    let mut r = AttrBuf::with_endian(e);
    r.put_u32(2, 4096).put_u32(6, 512);
    let r = Decoder(e).rings(r.bytes());
    assert_eq!((r.rx, r.rx_max), (Some(512), Some(4096)));
    let mut co = AttrBuf::with_endian(e);
    co.put_u32(2, 50).put(11, &[1]);
    let co = Decoder(e).coalesce(co.bytes());
    assert_eq!((co["rx-usecs"], co["adaptive-rx"]), (50, 1));
}

#[test]
fn mac() {
    assert_eq!(format_mac(&[2, 0xfc, 0, 0, 0, 1]), "02:fc:00:00:00:01");
}
