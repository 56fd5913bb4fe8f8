//! A small line-chart writer: axes with round ticks (linear, or powers of ten on a log axis), a polyline per
//! series with its values kept in `data-x`/`data-y` (what the page shows can be checked against the
//! report), a legend. Well-formed XML, so the page parses as XHTML too.
//!
//! It must not fetch or reference anything outside the chart (no fonts, no images, no scripts).

use std::fmt::Write as _;

use super::esc;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 280.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 44.0;

/// Series colours, in order (readable on white, distinct for the usual colour blindness).
pub(crate) const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// One line of a chart.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// Its name in the legend and in `data-series`.
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// An axis: its label, whether it is logarithmic (base 10; values ≤ 0 are not drawn), and fixed ticks
/// (value, label) instead of computed ones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Axis {
    pub(crate) label: String,
    pub(crate) log: bool,
    pub(crate) ticks: Option<Vec<(f64, String)>>,
}

impl Axis {
    pub(crate) fn linear(label: &str) -> Axis {
        Axis {
            label: label.to_owned(),
            ..Axis::default()
        }
    }

    pub(crate) fn log(label: &str) -> Axis {
        Axis {
            label: label.to_owned(),
            log: true,
            ticks: None,
        }
    }

    fn map(&self, v: f64) -> Option<f64> {
        if self.log {
            (v > 0.0).then(|| v.log10())
        } else {
            Some(v)
        }
    }
}

/// A line chart.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    /// `id` of the `<svg>` element.
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) x: Axis,
    pub(crate) y: Axis,
    pub(crate) series: Vec<Series>,
    /// Draw a dot at every point (for curves of few points).
    pub(crate) dots: bool,
}

/// Round tick values covering `[lo, hi]` (about five): steps of 1, 2 or 5 × 10^k.
pub(crate) fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 5.0 + 1e-9)
        .unwrap_or(10.0 * mag);
    let first = (lo / step - 1e-9).ceil() as i64;
    (first..first + 20)
        .map(|k| {
            // Rounded to the step's precision, so that 3 × 0.1 is 0.3.
            let digits = (-step.log10().floor()).max(0.0) as i32 + 1;
            let f = 10f64.powi(digits);
            (k as f64 * step * f).round() / f
        })
        .take_while(|v| *v <= hi + step * 1e-9)
        .collect()
}

/// A number as a tick label: no more digits than it needs.
pub(crate) fn label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.3}", v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    } else if a >= 1.0 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// The chart as an `<svg>` element.
pub(crate) fn render(c: &Chart) -> String {
    let mapped: Vec<Vec<(f64, f64)>> = c
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|&(x, y)| Some((c.x.map(x)?, c.y.map(y)?)))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect()
        })
        .collect();
    let all = || mapped.iter().flatten();
    let (mut x0, mut x1) = bounds(all().map(|p| p.0));
    let (mut y0, y1) = bounds(all().map(|p| p.1));
    if let Some(t) = &c.x.ticks {
        let (a, b) = bounds(t.iter().filter_map(|(v, _)| c.x.map(*v)));
        (x0, x1) = (x0.min(a), x1.max(b));
    }
    if !c.y.log {
        y0 = y0.min(0.0);
    }
    let (y0, y1) = widen(y0, y1, c.y.log);
    (x0, x1) = widen(x0, x1, c.x.log);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * plot_w;
    let py = |y: f64| TOP + plot_h - (y - y0) / (y1 - y0) * plot_h;

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="{}" class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11"><title>{}</title>"#,
        esc(&c.id),
        esc(&c.title)
    );
    let _ = write!(
        s,
        r#"<text x="{LEFT}" y="16" font-size="13" font-weight="bold">{}</text>"#,
        esc(&c.title)
    );
    // Grid and ticks.
    let y_ticks = ticks(&c.y, y0, y1);
    for (v, text) in &y_ticks {
        let y = py(*v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e3e3e3"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            esc(text)
        );
    }
    for (v, text) in ticks(&c.x, x0, x1) {
        let x = px(v);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#f0f0f0"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 16.0,
            esc(&text)
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>"##
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 6.0,
        esc(&c.x.label)
    );
    let _ = write!(
        s,
        r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + plot_h / 2.0,
        esc(&c.y.label)
    );
    // The series, then the legend.
    for (i, (series, pts)) in c.series.iter().zip(&mapped).enumerate() {
        let color = COLORS[i % COLORS.len()];
        let coords: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let xs: Vec<String> = series.points.iter().map(|p| p.0.to_string()).collect();
        let ys: Vec<String> = series.points.iter().map(|p| p.1.to_string()).collect();
        let _ = write!(
            s,
            r#"<polyline class="series" data-series="{}" data-x="{}" data-y="{}" fill="none" stroke="{color}" stroke-width="1.6" points="{}"/>"#,
            esc(&series.name),
            xs.join(" "),
            ys.join(" "),
            coords.join(" ")
        );
        if c.dots || pts.len() == 1 {
            for &(x, y) in pts {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.6" fill="{color}"/>"#,
                    px(x),
                    py(y)
                );
            }
        }
        // The legend: beside the title, in rows.
        let start = (LEFT + c.title.chars().count() as f64 * 7.6 + 16.0).max(330.0);
        let per_row = (((WIDTH - start) / 107.0) as usize).max(1);
        let lx = start + (i % per_row) as f64 * 107.0;
        let ly = 14.0 + (i / per_row) as f64 * 13.0;
        let _ = write!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="3" fill="{color}"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
            ly - 4.0,
            lx + 16.0,
            esc(&series.name)
        );
    }
    if mapped.iter().all(Vec::is_empty) {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#777">no data</text>"##,
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        );
    }
    s.push_str("</svg>");
    s
}

/// Smallest and largest of `values` ((0, 1) when there are none).
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) }
}

/// A range with room: an empty range widened; a log range to whole decades.
fn widen(lo: f64, hi: f64, log: bool) -> (f64, f64) {
    if log {
        let (a, b) = (lo.floor(), hi.ceil());
        if b > a { (a, b) } else { (a, a + 1.0) }
    } else if hi > lo {
        (lo, hi + (hi - lo) * 0.05)
    } else {
        (lo, lo + hi.abs().max(1.0))
    }
}

/// The ticks of an axis over `[lo, hi]` (in mapped units): fixed ones, powers of ten, or round steps.
fn ticks(axis: &Axis, lo: f64, hi: f64) -> Vec<(f64, String)> {
    if let Some(t) = &axis.ticks {
        return t
            .iter()
            .filter_map(|(v, l)| Some((axis.map(*v)?, l.clone())))
            .collect();
    }
    if axis.log {
        let (a, b) = (lo.round() as i32, hi.round() as i32);
        (a..=b)
            .map(|e| (f64::from(e), label(10f64.powi(e))))
            .collect()
    } else {
        linear_ticks(lo, hi)
            .into_iter()
            .map(|v| (v, label(v)))
            .collect()
    }
}
