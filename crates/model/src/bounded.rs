//! Decoding a peer's (or a file's) lists and maps with a cap on their length: elements
//! past the cap are skipped unread (nothing is allocated for them). For the
//! shapes of a report where tiny JSON becomes large values in memory (a list
//! of strings: the 3 bytes of `"",` become a 24-byte `String`).

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

/// Most interfaces read from a peer's facts.
pub const MAX_INTERFACES: usize = 4096;
/// Most IRQs of one interface read from a peer's facts.
pub const MAX_IRQS: usize = 4096;
/// Most offloads of one interface read from a peer's facts.
pub const MAX_OFFLOADS: usize = 256;
/// Most interrupt-moderation attributes of one interface read from a peer.
pub const MAX_COALESCE: usize = 64;

struct SeqAtMost<T>(usize, PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for SeqAtMost<T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::new();
        while out.len() < self.0 {
            match a.next_element()? {
                Some(t) => out.push(t),
                None => return Ok(out),
            }
        }
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(out)
    }
}

/// A list of at most `max` elements; the rest are skipped.
pub fn vec_at_most<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    max: usize,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(SeqAtMost(max, PhantomData))
}

struct MapAtMost<V>(usize, PhantomData<V>);

impl<'de, V: Deserialize<'de>> Visitor<'de> for MapAtMost<V> {
    type Value = BTreeMap<String, V>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while out.len() < self.0 {
            match a.next_entry()? {
                Some((k, v)) => {
                    out.insert(k, v);
                }
                None => return Ok(out),
            }
        }
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(out)
    }
}

/// A map of at most `max` entries; the rest are skipped.
pub fn map_at_most<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
    d: D,
    max: usize,
) -> Result<BTreeMap<String, V>, D::Error> {
    d.deserialize_map(MapAtMost(max, PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct T {
        #[serde(deserialize_with = "two")]
        v: Vec<String>,
        #[serde(deserialize_with = "one")]
        m: BTreeMap<String, u64>,
    }
    fn two<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        vec_at_most(d, 2)
    }
    fn one<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, u64>, D::Error> {
        map_at_most(d, 1)
    }

    #[test]
    fn lists_and_maps_keep_at_most_their_cap() {
        let t: T =
            serde_json::from_str(r#"{"v":["a","b",["c"],{"d":1}],"m":{"x":1,"y":[2]}}"#).unwrap();
        assert_eq!(t.v, ["a", "b"]);
        assert_eq!(t.m.len(), 1);
        let t: T = serde_json::from_str(r#"{"v":[],"m":{}}"#).unwrap();
        assert!(t.v.is_empty() && t.m.is_empty());
        assert!(serde_json::from_str::<T>(r#"{"v":"a","m":{}}"#).is_err());
    }
}
