//! Bounds and spans of the charts.

use super::*;

#[test]
fn spans_are_never_empty() {
    assert_eq!(span(5.0, 5.0), (4.5, 5.5));
    assert_eq!(span(f64::NAN, 1.0), (0.0, 1.0));
    assert_eq!(span(2.0, 1.0), (0.0, 1.0));
    let (a, b) = span(0.0, 10.0);
    assert!(a < 0.0 && b > 10.0);
}

#[test]
fn tags_the_svg() {
    let s = tag(
        "<svg width=\"1\" height=\"1\" viewBox=\"0 0 1 1\" xmlns=\"http://www.w3.org/2000/svg\">\n</svg>".into(),
        "chart-x",
        "a <b>",
    );
    assert!(
        s.starts_with(
            "<svg id=\"chart-x\" class=\"chart\" role=\"img\" aria-label=\"a &lt;b&gt;\" width"
        ),
        "{s}"
    );
    assert!(s.contains("<title>a &lt;b&gt;</title>"), "{s}");
    assert!(!s.contains("http"), "{s}");
}
