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

/// CIELAB lightness L* (0 black to 100 white) of a colour.
fn lightness(c: RGBColor) -> f64 {
    let y = luminance(c);
    let d: f64 = 6.0 / 29.0;
    let f = if y > d.powi(3) {
        y.cbrt()
    } else {
        y / (3.0 * d * d) + 4.0 / 29.0
    };
    116.0 * f - 16.0
}

/// The heat map's scale is perceptual: 21 % and 46 % (the reviewer's two
/// "both pale" squares) differ clearly in lightness, and lightness rises
/// evenly from 0 % to 100 %.
#[test]
fn heat_colours_are_a_perceptual_scale() {
    let (a, b) = (lightness(heat(21.0)), lightness(heat(46.0)));
    assert!(b - a > 15.0, "21 %: L* {a:.1}, 46 %: L* {b:.1}");
    let mut last = lightness(heat(0.0));
    for p in 1..=100 {
        let l = lightness(heat(f64::from(p)));
        assert!(l > last, "L* falls at {p} %: {last:.1} → {l:.1}");
        last = l;
    }
    assert!(lightness(heat(100.0)) - lightness(heat(0.0)) > 60.0);
    // The ends are viridis's published ends; out-of-range values clamp.
    assert_eq!(heat(0.0), RGBColor(0x44, 0x01, 0x54));
    assert_eq!(heat(100.0), RGBColor(0xfd, 0xe7, 0x25));
    assert_eq!(heat(-5.0), heat(0.0));
    assert_eq!(heat(f64::NAN), heat(0.0));
    assert_eq!(heat(250.0), heat(100.0));
}

/// Values print white on the dark end of the scale and black on the light.
#[test]
fn heat_text_contrasts_with_its_square() {
    assert_eq!(text_on(heat(0.0)), WHITE);
    assert_eq!(text_on(heat(30.0)), WHITE);
    assert_eq!(text_on(heat(90.0)), BLACK);
    assert_eq!(text_on(RGBColor(225, 225, 225)), BLACK);
}

/// Issue 38: the bar chart's legend sits in a band no bar reaches (the last
/// bar, under the upper-right legend, was covered).
#[test]
fn bar_legends_get_a_band_no_bar_reaches() {
    for (lo, hi) in [
        (0.0, 10.0),
        (3.0, 3.0),
        (-5.0, 8.0),
        (-9.0, -1.0),
        (-4.0, 0.0),
    ] {
        let (y0, y1) = span(lo, hi);
        let y0 = if lo >= 0.0 { 0.0 } else { y0 };
        let (a, b, top) = with_legend_room(y0, y1, hi);
        let band = (b - a) * LEGEND_ROOM;
        if top {
            assert!(
                y1 <= b - band + 1e-9,
                "{lo}..{hi}: bars to {y1}, band from {}",
                b - band
            );
        } else {
            assert!(
                y0 >= a + band - 1e-9,
                "{lo}..{hi}: bars to {y0}, band to {}",
                a + band
            );
        }
        assert!(a <= y0 && b >= y1);
    }
}
