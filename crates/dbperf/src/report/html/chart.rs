//! One chart description ([`Chart`]: titled axes with units, line series, shaded bands,
//! horizontal limit lines, an optional right axis, linear or log axes) drawn to inline SVG
//! with `plotters`' SVG backend, so every chart of a report is made the same way.

use std::ops::Range;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde::Serialize;

/// Colours for successive series (colour-blind safe: Okabe-Ito).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(240, 228, 66),
];

/// Warmup shading.
pub const WARMUP: RGBColor = RGBColor(150, 150, 150);
/// Stall shading.
pub const STALL: RGBColor = RGBColor(220, 50, 32);

/// One line.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` in data units; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
    /// Line colour.
    #[serde(skip)]
    pub color: RGBColor,
    /// Drawn against the right axis.
    pub secondary: bool,
    /// Also mark each point (for sparse series such as users sweeps).
    #[serde(skip)]
    pub markers: bool,
}

impl Series {
    /// A line on the left axis.
    pub fn new(name: impl Into<String>, color: RGBColor, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color,
            secondary: false,
            markers: false,
        }
    }

    /// The same line against the right axis.
    pub fn on_right(mut self) -> Series {
        self.secondary = true;
        self
    }

    /// The same line with a marker at each point.
    pub fn with_markers(mut self) -> Series {
        self.markers = true;
        self
    }
}

/// A shaded span of x (warmup, a stall).
#[derive(Debug, Clone, Serialize)]
pub struct Band {
    /// Start, x units.
    pub from: f64,
    /// End, x units.
    pub to: f64,
    /// Fill colour (drawn translucent).
    #[serde(skip)]
    pub color: RGBColor,
    /// Legend text; bands sharing a label get one legend entry.
    pub label: String,
}

/// A horizontal limit (e.g. where sync flushing starts).
#[derive(Debug, Clone, Serialize)]
pub struct Limit {
    /// Height, y units of its axis.
    pub y: f64,
    /// Legend text.
    pub label: String,
    /// Colour of the dashed line.
    #[serde(skip)]
    pub color: RGBColor,
    /// Against the right axis.
    pub secondary: bool,
}

/// Axis scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Linear from 0 (or the smallest value if negative).
    Linear,
    /// Logarithmic over the data's range.
    Log,
    /// Logarithmic base 2, ticks at powers of two (users sweeps: 1, 2, 4, ... 512).
    Log2,
    /// Percentiles: x is `1 / (1 - q)` on a log axis, labelled `90%`, `99%`, `99.9%`.
    Nines,
}

/// A chart to draw. It serializes to the data it shows (without colours or size), which the
/// HTML page embeds next to the SVG so the numbers can be read back by a program.
#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    /// Caption.
    pub title: String,
    /// X axis description with its unit.
    pub x_label: String,
    /// Left axis description with its unit.
    pub y_label: String,
    /// Right axis description with its unit (needed when a series or limit is secondary).
    pub y2_label: Option<String>,
    /// Lines.
    pub series: Vec<Series>,
    /// Shaded spans.
    pub bands: Vec<Band>,
    /// Horizontal limits.
    pub limits: Vec<Limit>,
    /// X scale.
    pub x_scale: Scale,
    /// Left-axis scale (the right axis is always linear).
    pub y_scale: Scale,
    /// Pixel size.
    #[serde(skip)]
    pub size: (u32, u32),
    /// X values are already `log2` of the data: label ticks as powers of two.
    #[serde(skip)]
    x_pow2: bool,
}

/// A chart that could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart {title:?}: {message}")]
pub struct ChartError {
    title: String,
    message: String,
}

impl ChartError {
    /// The chart `title` failed with `message`.
    pub fn new(title: &str, message: String) -> ChartError {
        ChartError {
            title: title.to_string(),
            message,
        }
    }
}

impl Chart {
    /// An empty chart with linear axes, 900x320 pixels.
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            y2_label: None,
            series: Vec::new(),
            bands: Vec::new(),
            limits: Vec::new(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            size: (900, 320),
            x_pow2: false,
        }
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        self.series
            .iter()
            .all(|s| s.points.iter().all(|(x, y)| !finite(*x, *y)))
    }

    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> Result<String, ChartError> {
        if self.x_scale == Scale::Log2 {
            // Drawn on a linear axis of log2(x), so the ticks fall on the powers of two.
            let mut c = self.clone();
            c.x_scale = Scale::Linear;
            c.x_pow2 = true;
            let log2 = |x: f64| if x > 0.0 { x.log2() } else { f64::NAN };
            for s in &mut c.series {
                s.points.iter_mut().for_each(|p| p.0 = log2(p.0));
            }
            for b in &mut c.bands {
                (b.from, b.to) = (log2(b.from), log2(b.to));
            }
            return c.svg();
        }
        let mut out = String::new();
        let err = |e: &dyn std::fmt::Display| ChartError {
            title: self.title.clone(),
            message: e.to_string(),
        };
        {
            let root = SVGBackend::with_string(&mut out, self.size).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let x = self.x_range(false);
            let y = self.y_range(false);
            match (self.x_scale, self.y_scale) {
                (Scale::Linear, Scale::Linear) => self.draw(&root, x, y),
                (Scale::Linear, _) => self.draw(&root, x, y.log_scale()),
                (_, Scale::Linear) => self.draw(&root, x.log_scale(), y),
                (_, _) => self.draw(&root, x.log_scale(), y.log_scale()),
            }
            .map_err(|e| err(&e))?;
            root.present().map_err(|e| err(&e))?;
        }
        Ok(out)
    }

    fn points(&self, secondary: bool) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series
            .iter()
            .filter(move |s| s.secondary == secondary)
            .flat_map(|s| s.points.iter().copied())
            .filter(|(x, y)| finite(*x, *y))
    }

    fn x_range(&self, _secondary: bool) -> Range<f64> {
        let xs = self.points(false).chain(self.points(true)).map(|p| p.0);
        let (lo, hi) = min_max(xs.chain(self.bands.iter().flat_map(|b| [b.from, b.to])));
        match self.x_scale {
            Scale::Linear if self.x_pow2 => (lo - 0.3)..(hi + 0.3),
            Scale::Linear => lo.min(0.0)..padded(lo.min(0.0), hi),
            Scale::Log | Scale::Log2 | Scale::Nines => log_range(lo, hi),
        }
    }

    fn y_range(&self, secondary: bool) -> Range<f64> {
        let ys = self.points(secondary).map(|p| p.1);
        let limits = self.limits.iter().filter(|l| l.secondary == secondary).map(|l| l.y);
        let (lo, hi) = min_max(ys.chain(limits));
        match (secondary, self.y_scale) {
            (false, Scale::Log | Scale::Log2 | Scale::Nines) => log_range(lo, hi),
            _ => lo.min(0.0)..padded(lo.min(0.0), hi * 1.05),
        }
    }

    fn draw<X, Y>(
        &self,
        root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        x: X,
        y: Y,
    ) -> Result<(), Box<dyn std::error::Error + '_>>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let dual = self.series.iter().any(|s| s.secondary) || self.limits.iter().any(|l| l.secondary);
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(&self.title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .right_y_label_area_size(if dual { 64 } else { 0 });
        let chart = builder.build_cartesian_2d(x, y)?;
        let y2: RangedCoordf64 = self.y_range(true).into();
        let x2: RangedCoordf64 = (0.0..1.0).into();
        let mut chart = chart.set_secondary_coord(x2, y2);
        let (nines, pow2) = (self.x_scale == Scale::Nines, self.x_pow2);
        let x_fmt = move |v: &f64| {
            if nines {
                nines_label(*v)
            } else if pow2 {
                if (v - v.round()).abs() < 1e-6 {
                    short_number(2f64.powf(v.round()))
                } else {
                    String::new()
                }
            } else {
                short_number(*v)
            }
        };
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&|v| short_number(*v))
            .light_line_style(RGBColor(235, 235, 235))
            .axis_desc_style(("sans-serif", 13))
            .draw()?;
        if dual {
            chart
                .configure_secondary_axes()
                .y_desc(self.y2_label.as_deref().unwrap_or(""))
                .y_label_formatter(&|v| short_number(*v))
                .axis_desc_style(("sans-serif", 13))
                .draw()?;
        }

        // Bands span the whole height: draw them on the secondary coordinates' y, whose
        // range is known, at the primary x.
        let (y_lo, y_hi) = {
            let r = self.y_range(false);
            (r.start, r.end)
        };
        let mut labelled = Vec::new();
        for band in &self.bands {
            let fill = band.color.mix(0.18).filled();
            let series = chart.draw_series(std::iter::once(Rectangle::new(
                [(band.from, y_lo), (band.to, y_hi)],
                fill,
            )))?;
            if !labelled.contains(&band.label) {
                labelled.push(band.label.clone());
                let c = band.color;
                series
                    .label(&band.label)
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.mix(0.3).filled()));
            }
        }
        let x_span = self.x_range(false);
        for limit in &self.limits {
            let (lo, hi) = (x_span.start, x_span.end);
            let style = ShapeStyle::from(&limit.color).stroke_width(1);
            let line = DashedLineSeries::new([(lo, limit.y), (hi, limit.y)], 6, 4, style);
            let c = limit.color;
            let legend = move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 16, y)], c);
            if limit.secondary {
                let (x2lo, x2hi) = (0.0, 1.0);
                chart
                    .draw_secondary_series(DashedLineSeries::new([(x2lo, limit.y), (x2hi, limit.y)], 6, 4, style))?
                    .label(&limit.label)
                    .legend(legend);
            } else {
                chart.draw_series(line)?.label(&limit.label).legend(legend);
            }
        }
        for s in &self.series {
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|(x, y)| finite(*x, *y)).collect();
            let c = s.color;
            let style = ShapeStyle::from(&c).stroke_width(2);
            let legend = move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2));
            if s.secondary {
                // The secondary x is 0..1 over the primary span.
                let width = (x_span.end - x_span.start).max(f64::MIN_POSITIVE);
                let mapped: Vec<(f64, f64)> = pts.iter().map(|(x, y)| ((x - x_span.start) / width, *y)).collect();
                chart
                    .draw_secondary_series(LineSeries::new(mapped, style))?
                    .label(&s.name)
                    .legend(legend);
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), style))?
                    .label(&s.name)
                    .legend(legend);
                if s.markers {
                    chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
                }
            }
        }
        chart
            .configure_series_labels()
            .position(self.legend_corner())
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 12))
            .draw()?;
        Ok(())
    }
}

impl Chart {
    /// The corner of the plot with the fewest data points, for the legend.
    fn legend_corner(&self) -> SeriesLabelPosition {
        let unit = |v: f64, r: &Range<f64>, log: bool| {
            let (v, lo, hi) = if log {
                (v.ln(), r.start.ln(), r.end.ln())
            } else {
                (v, r.start, r.end)
            };
            (v - lo) / (hi - lo).max(f64::MIN_POSITIVE)
        };
        let x_log = matches!(self.x_scale, Scale::Log | Scale::Nines);
        let xr = self.x_range(false);
        let mut counts = [0usize; 4]; // upper right, upper left, lower right, lower left
        for secondary in [false, true] {
            let yr = self.y_range(secondary);
            let y_log = !secondary && matches!(self.y_scale, Scale::Log | Scale::Nines);
            for (x, y) in self.points(secondary) {
                let (u, w) = (unit(x, &xr, x_log), unit(y, &yr, y_log));
                let corner = match (u > 0.6, w > 0.6, u < 0.4, w < 0.4) {
                    (true, true, _, _) => 0,
                    (_, true, true, _) => 1,
                    (true, _, _, true) => 2,
                    (_, _, true, true) => 3,
                    _ => continue,
                };
                counts[corner] += 1;
            }
        }
        let best = (0..4).min_by_key(|&i| (counts[i], i)).unwrap_or(0);
        [
            SeriesLabelPosition::UpperRight,
            SeriesLabelPosition::UpperLeft,
            SeriesLabelPosition::LowerRight,
            SeriesLabelPosition::LowerLeft,
        ][best]
            .clone()
    }
}

fn finite(x: f64, y: f64) -> bool {
    x.is_finite() && y.is_finite()
}

fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if lo > hi {
        (0.0, 1.0)
    } else {
        (lo, hi)
    }
}

/// A range ending above `hi` (a flat series still gets height).
fn padded(lo: f64, hi: f64) -> f64 {
    if hi > lo {
        hi
    } else {
        lo + 1.0
    }
}

/// A log range over the positive part of `lo..hi`, with a margin (a single value gets a
/// factor of 2 either side).
fn log_range(lo: f64, hi: f64) -> Range<f64> {
    let lo = if lo > 0.0 { lo } else { hi.max(1e-3) / 1000.0 };
    let hi = hi.max(lo);
    if hi / lo < 1.01 {
        return (lo / 2.0)..(hi * 2.0);
    }
    (lo / 1.2)..(hi * 1.2)
}

/// `1 / (1 - q)` as a percentile label: 10 → `90%`, 1000 → `99.9%`.
fn nines_label(v: f64) -> String {
    if v < 1.0 {
        return String::new();
    }
    let pct = 100.0 * (1.0 - 1.0 / v);
    let s = format!("{pct:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// Axis numbers: `1.5k`, `2M`, `0.25`.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    let (n, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if n.fract().abs() < 1e-9 || n.abs() >= 100.0 {
        format!("{n:.0}")
    } else if n.abs() >= 1.0 {
        format!("{n:.1}")
    } else {
        format!("{n:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tps_chart() -> Chart {
        let mut c = Chart::new("Throughput", "time (s)", "transactions/s");
        c.series.push(Series::new(
            "TPS",
            PALETTE[0],
            (0..30).map(|i| (i as f64, 1000.0 + i as f64)).collect(),
        ));
        c.bands.push(Band {
            from: 0.0,
            to: 5.0,
            color: WARMUP,
            label: "warmup".into(),
        });
        c
    }

    #[test]
    fn a_chart_is_an_svg_with_its_title_axis_units_and_legend() {
        let svg = tps_chart().svg().unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        for text in ["Throughput", "time (s)", "transactions/s", "TPS", "warmup"] {
            assert!(svg.contains(text), "{text} missing");
        }
    }

    #[test]
    fn dual_and_log_axes_draw() {
        let mut c = tps_chart();
        c.y2_label = Some("dirty pages (%)".into());
        c.series
            .push(Series::new("dirty", PALETTE[1], vec![(0.0, 10.0), (29.0, 80.0)]).on_right());
        c.limits.push(Limit {
            y: 90.0,
            label: "sync flush".into(),
            color: PALETTE[2],
            secondary: true,
        });
        let svg = c.svg().unwrap();
        assert!(svg.contains("dirty pages (%)") && svg.contains("sync flush"));

        let mut spectrum = Chart::new("Latency by percentile", "percentile", "latency (ms)");
        spectrum.x_scale = Scale::Nines;
        spectrum.y_scale = Scale::Log;
        spectrum.series.push(Series::new(
            "run",
            PALETTE[0],
            vec![(2.0, 1.0), (100.0, 5.0), (1000.0, 40.0)],
        ));
        let svg = spectrum.svg().unwrap();
        assert!(svg.contains("99%"), "the nines axis is labelled in percentiles");
    }

    #[test]
    fn an_empty_chart_says_so_and_still_draws() {
        let c = Chart::new("Nothing", "x", "y");
        assert!(c.is_empty());
        assert!(c.svg().is_ok());
    }

    #[test]
    fn labels() {
        assert_eq!(nines_label(10.0), "90%");
        assert_eq!(nines_label(1000.0), "99.9%");
        assert_eq!(nines_label(2.0), "50%");
        assert_eq!(short_number(1500.0), "1500");
        assert_eq!(short_number(15000.0), "15k");
        assert_eq!(short_number(2_000_000.0), "2M");
        assert_eq!(short_number(0.25), "0.25");
        assert_eq!(short_number(12.5), "12.5");
    }
}
