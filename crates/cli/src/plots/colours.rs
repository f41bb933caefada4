//! The charts' colours: as many as a chart has series, no two alike.

use plotters::style::RGBColor;

/// Tableau's ten categorical colours, used while a chart needs no more.
const TABLEAU: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// `n` colours, no two alike: Tableau's ten when they suffice, else hues spread evenly round
/// the wheel at three lightness levels (so neighbours in the legend differ in both), and any
/// two that still round to the same RGB value are pulled apart.
pub(super) fn palette(n: usize) -> Vec<RGBColor> {
    if n <= TABLEAU.len() {
        return TABLEAU[..n].to_vec();
    }
    let mut out: Vec<RGBColor> = Vec::with_capacity(n);
    for i in 0..n {
        let hue = i as f64 * 360.0 / n as f64;
        let light = [0.45, 0.32, 0.58][i % 3];
        let mut c = hsl(hue, 0.7, light);
        while out.contains(&c) {
            c = RGBColor(c.0, c.1, c.2.wrapping_add(1));
        }
        out.push(c);
    }
    out
}

/// HSL (hue in degrees, saturation and lightness in 0..=1) to RGB.
fn hsl(hue: f64, sat: f64, light: f64) -> RGBColor {
    let chroma = (1.0 - (2.0 * light - 1.0).abs()) * sat;
    let h = (hue % 360.0) / 60.0;
    let x = chroma * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (chroma, x, 0.0),
        1 => (x, chroma, 0.0),
        2 => (0.0, chroma, x),
        3 => (0.0, x, chroma),
        4 => (x, 0.0, chroma),
        _ => (chroma, 0.0, x),
    };
    let m = light - chroma / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(byte(r), byte(g), byte(b))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn palettes_never_repeat_a_colour() {
        for n in 0..=1100 {
            let p = palette(n);
            assert_eq!(p.len(), n);
            let distinct: std::collections::BTreeSet<(u8, u8, u8)> =
                p.iter().map(|c| (c.0, c.1, c.2)).collect();
            assert_eq!(distinct.len(), n, "{n} colours");
        }
    }
}
