//! The key strip under the forest plot and the search trace: marks and
//! their names, left to right.

use plotters::prelude::*;

use super::{Area, DrawResult, FONT};

/// Height of the key strip at the bottom of a chart.
pub(super) const KEY_PX: u32 = 34;

/// A mark of the key, drawn at the entry's x on the strip's middle line.
pub(super) enum Mark {
    /// A filled dot of this radius.
    Dot(RGBColor, i32),
    /// A ring (2 px stroke) of this radius.
    Ring(RGBColor, i32),
    /// A filled triangle.
    Triangle(RGBColor),
    /// A 20 px horizontal bar: an interval drawn across.
    Across,
    /// An 18 px vertical bar: an interval drawn up.
    Upright,
    /// A 20 × 16 px filled box: a band.
    Band(RGBColor),
}

impl Mark {
    /// Where its name starts, right of the mark.
    fn gap(&self) -> i32 {
        match self {
            Mark::Across | Mark::Band(_) => 16,
            _ => 10,
        }
    }
}

/// Draw `entries` (mark, name, room to the next entry in px) on `foot`
/// from x = 40, in 13 px black text.
pub(super) fn draw_key(foot: &Area<'_>, entries: &[(Mark, &str, i32)]) -> DrawResult<()> {
    let text = (FONT, 13).into_font().color(&BLACK);
    let mid = i32::try_from(KEY_PX / 2).unwrap_or(17);
    let mut x = 40;
    for (mark, name, room) in entries {
        match mark {
            Mark::Dot(c, r) => foot.draw(&Circle::new((x, mid), *r, c.filled()))?,
            Mark::Ring(c, r) => foot.draw(&Circle::new((x, mid), *r, c.stroke_width(2)))?,
            Mark::Triangle(c) => foot.draw(&TriangleMarker::new((x, mid), 7, c.filled()))?,
            Mark::Across => foot.draw(&PathElement::new(
                vec![(x - 10, mid), (x + 10, mid)],
                BLACK.stroke_width(2),
            ))?,
            Mark::Upright => foot.draw(&PathElement::new(
                vec![(x, mid - 9), (x, mid + 9)],
                BLACK.stroke_width(2),
            ))?,
            Mark::Band(c) => foot.draw(&Rectangle::new(
                [(x - 10, mid - 8), (x + 10, mid + 8)],
                c.filled(),
            ))?,
        }
        foot.draw(&Text::new(*name, (x + mark.gap(), mid - 7), text.clone()))?;
        x = x.saturating_add(*room);
    }
    Ok(())
}
