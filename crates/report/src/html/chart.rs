//! One chart description ([`Chart`]: titled axes with units, line series, shaded bands,
//! horizontal limit lines, an optional lower panel sharing x, linear or log axes, fixed axis
//! ranges) turned into a plotly figure (the `plotly` crate's types, serialized to the JSON
//! that plotly.js draws in the page), so every chart of a report is made the same way:
//! 1-2-5 ticks on log axes, the legend above the plot, values on hover; [`warmup_band`] is
//! the one way a warmup is shaded.

use plotly::common::{Anchor, DashType, Fill, Font, HoverInfo, Line, Marker, Mode, Orientation, Title};
use plotly::layout::{Axis, AxisType, HoverMode, Legend, Margin, ModeBar, SpikeMode, SpikeSnap, TicksDirection};
use plotly::{Configuration, Layout, Plot, Scatter};
use serde::Serialize;

/// A colour (red, green, blue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Colour(pub u8, pub u8, pub u8);

impl Colour {
    /// As plotly's opaque colour.
    pub fn rgb(self) -> plotly::color::Rgb {
        plotly::color::Rgb::new(self.0, self.1, self.2)
    }

    /// As plotly's colour with `alpha` opacity.
    pub fn rgba(self, alpha: f64) -> plotly::color::Rgba {
        plotly::color::Rgba::new(self.0, self.1, self.2, alpha)
    }
}

/// Colours for successive series (colour-blind safe: Okabe-Ito).
pub const PALETTE: [Colour; 8] = [
    Colour(0, 114, 178),
    Colour(213, 94, 0),
    Colour(0, 158, 115),
    Colour(204, 121, 167),
    Colour(230, 159, 0),
    Colour(86, 180, 233),
    Colour(120, 120, 120),
    Colour(153, 136, 0),
];

/// Warmup shading.
pub const WARMUP: Colour = Colour(150, 150, 150);
/// Stall shading, and the limit where writers wait.
pub const STALL: Colour = Colour(200, 30, 30);
/// Axis lines and reference lines.
pub const INK: Colour = Colour(60, 60, 60);

/// Height of a one-panel chart, pixels.
const HEIGHT: usize = 380;
/// Height of a chart with a lower panel, pixels.
const HEIGHT_TWO_PANELS: usize = 520;
/// Height of one of a row of small multiples, pixels.
const HEIGHT_SMALL: usize = 260;
/// Share of the plot height the lower panel takes.
const LOWER_PANEL: f64 = 0.32;

/// One line.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(x, y)` in data units; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
    /// Line colour.
    #[serde(skip)]
    pub color: Colour,
    /// Drawn in the lower panel (same x, its own y axis: [`Chart::y2_label`]).
    pub secondary: bool,
    /// Also mark each point (for sparse series such as users sweeps).
    #[serde(skip)]
    pub markers: bool,
    /// Only mark each point, with no line (measurements that are not a sequence).
    #[serde(skip)]
    pub dots: bool,
}

impl Series {
    /// A line in the main panel.
    pub fn new(name: impl Into<String>, color: Colour, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color,
            secondary: false,
            markers: false,
            dots: false,
        }
    }

    /// The same line in the lower panel.
    pub fn below(mut self) -> Series {
        self.secondary = true;
        self
    }

    /// The same line with a marker at each point.
    pub fn with_markers(mut self) -> Series {
        self.markers = true;
        self
    }

    /// The points as markers only, no line.
    pub fn dots(mut self) -> Series {
        self.dots = true;
        self
    }
}

/// A shaded span of x (warmup, a stall), across every panel.
#[derive(Debug, Clone, Serialize)]
pub struct Band {
    /// Start, x units.
    pub from: f64,
    /// End, x units.
    pub to: f64,
    /// Fill colour (drawn translucent).
    #[serde(skip)]
    pub color: Colour,
    /// Legend text; bands sharing a label get one legend entry.
    pub label: String,
}

/// The warmup of a run that ends at `end_s` (s since start), shaded from 0; `None` without one.
pub fn warmup_band(end_s: f64) -> Option<Band> {
    (end_s > 0.0).then(|| Band {
        from: 0.0,
        to: end_s,
        color: WARMUP,
        label: "warmup".into(),
    })
}

/// A horizontal limit (e.g. where sync flushing starts), drawn dashed.
#[derive(Debug, Clone, Serialize)]
pub struct Limit {
    /// Height, y units of its panel.
    pub y: f64,
    /// Legend text.
    pub label: String,
    /// Colour of the dashed line.
    #[serde(skip)]
    pub color: Colour,
    /// In the lower panel.
    pub secondary: bool,
}

/// Axis scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Linear from 0 (or the smallest value if negative).
    Linear,
    /// Logarithmic over the data's range, ticks at 1, 2, 5 times powers of ten.
    Log,
    /// Logarithmic base 2, ticks at powers of two (users sweeps: 1, 2, 4, ... 512).
    Log2,
    /// Percentiles: x is `1 / (1 - q)` on a log axis, labelled `90%`, `99%`, `99.9%`.
    Nines,
}

/// A chart to draw. It serializes to the data it shows (without colours), which the HTML
/// page embeds next to the figure so the numbers can be read back by a program.
#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    /// Caption.
    pub title: String,
    /// X axis description with its unit.
    pub x_label: String,
    /// Main panel's y axis description with its unit.
    pub y_label: String,
    /// Lower panel's y axis description with its unit (needed when a series or limit is
    /// secondary).
    pub y2_label: Option<String>,
    /// Lines.
    pub series: Vec<Series>,
    /// Shaded spans.
    pub bands: Vec<Band>,
    /// Horizontal limits.
    pub limits: Vec<Limit>,
    /// X scale.
    pub x_scale: Scale,
    /// Main panel's y scale (the lower panel is always linear).
    pub y_scale: Scale,
    /// Fixed x range (charts of one run share their time axis); `None`: the data's.
    pub x_range: Option<(f64, f64)>,
    /// Fixed y range of the main panel (percentages: 0..100); `None`: the data's.
    pub y_range: Option<(f64, f64)>,
    /// Fixed y range of the lower panel; `None`: the data's.
    pub y2_range: Option<(f64, f64)>,
    /// Charts of one page naming the same group are drawn over the same x (a run's time
    /// charts): hovering one shows the same vertical line and values in all of them.
    #[serde(skip)]
    pub x_group: Option<String>,
    /// One of a row of small multiples (one chart per user count): drawn lower.
    #[serde(skip)]
    pub small: bool,
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

/// One axis as drawn: its plotly range (log axes: in powers of ten) and fixed ticks.
struct AxisPlan {
    log: bool,
    range: Vec<f64>,
    ticks: Option<(Vec<f64>, Vec<String>)>,
}

impl Chart {
    /// An empty chart with linear axes.
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
            x_range: None,
            y_range: None,
            y2_range: None,
            x_group: None,
            small: false,
        }
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        self.series
            .iter()
            .all(|s| s.points.iter().all(|(x, y)| !finite(*x, *y)))
    }

    /// Whether anything is drawn in the lower panel.
    fn two_panels(&self) -> bool {
        self.series.iter().any(|s| s.secondary) || self.limits.iter().any(|l| l.secondary)
    }

    fn points(&self, secondary: bool) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series
            .iter()
            .filter(move |s| s.secondary == secondary)
            .flat_map(|s| s.points.iter().copied())
            .filter(|(x, y)| finite(*x, *y))
    }

    /// The x axis: the fixed range, or the data's and the bands'.
    fn x_plan(&self) -> AxisPlan {
        let (lo, hi) = self.x_range.unwrap_or_else(|| {
            let xs = self.points(false).chain(self.points(true)).map(|p| p.0);
            min_max(xs.chain(self.bands.iter().flat_map(|b| [b.from, b.to])))
        });
        match self.x_scale {
            Scale::Linear => AxisPlan {
                log: false,
                range: if self.x_range.is_some() {
                    vec![lo, padded(lo, hi)]
                } else {
                    vec![lo.min(0.0), padded(lo.min(0.0), hi)]
                },
                ticks: None,
            },
            Scale::Log => log_plan(lo, hi, short_number),
            Scale::Log2 => {
                let (lo, hi) = positive(lo, hi);
                let (a, b) = (lo.log2().floor() as i32, hi.log2().ceil() as i32);
                let values: Vec<f64> = (a..=b).map(|e| 2f64.powi(e)).collect();
                let text = values.iter().map(|v| short_number(*v)).collect();
                let pad = 0.03 * (b - a).max(1) as f64 * 2f64.log10();
                AxisPlan {
                    log: true,
                    range: vec![lo.log10() - pad, hi.log10() + pad],
                    ticks: Some((values, text)),
                }
            }
            Scale::Nines => {
                let (lo, hi) = positive(lo.max(1.0), hi);
                // 0%, 50%, 90%, 99%, ... out to the data's last nine.
                let mut values = vec![1.0, 2.0];
                let mut v = 10.0;
                while v <= hi * 1.0001 {
                    values.push(v);
                    v *= 10.0;
                }
                let text = values.iter().map(|v| nines_label(*v)).collect();
                let top = values.last().copied().unwrap_or(hi).max(hi);
                let pad = 0.02 * (top.log10() - lo.log10()).max(0.5);
                AxisPlan {
                    log: true,
                    range: vec![lo.log10() - pad, top.log10() + pad],
                    ticks: Some((values, text)),
                }
            }
        }
    }

    /// A panel's y axis: the fixed range, or the data's and its limits'.
    fn y_plan(&self, secondary: bool) -> AxisPlan {
        let fixed = if secondary { self.y2_range } else { self.y_range };
        let scale = if secondary { Scale::Linear } else { self.y_scale };
        let ys = self.points(secondary).map(|p| p.1);
        let limits = self.limits.iter().filter(|l| l.secondary == secondary).map(|l| l.y);
        let (lo, hi) = fixed.unwrap_or_else(|| min_max(ys.chain(limits)));
        match scale {
            Scale::Linear => AxisPlan {
                log: false,
                range: if fixed.is_some() {
                    vec![lo, hi]
                } else {
                    let lo = lo.min(0.0);
                    vec![lo, padded(lo, hi + (hi - lo) * 0.05)]
                },
                ticks: None,
            },
            Scale::Log | Scale::Log2 | Scale::Nines => log_plan(lo, hi, short_number),
        }
    }

    /// The chart as a plotly figure.
    pub fn figure(&self) -> Plot {
        let two = self.two_panels();
        let x = self.x_plan();
        let y = self.y_plan(false);
        let mut plot = Plot::new();
        let nines = self.x_scale == Scale::Nines;
        let time_like = self.x_scale == Scale::Linear;
        // Time charts: one hover box per x, x in its header and each line's `name : value`
        // (plotly's own, numbers by the axes' hover format); elsewhere the point's own box.
        let value_hover = |name: &str| {
            if nines {
                format!("%{{text}} · %{{y:.4~g}}<extra>{}</extra>", hover_escape(name))
            } else {
                format!("%{{x:.4~g}} · %{{y:.4~g}}<extra>{}</extra>", hover_escape(name))
            }
        };
        let panels: &[bool] = if two { &[false, true] } else { &[false] };

        let (x_lo, x_hi) = x.data_range();
        for s in &self.series {
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|(x, y)| finite(*x, *y)).collect();
            let (xs, ys): (Vec<f64>, Vec<f64>) = pts.iter().copied().unzip();
            let mode = if s.dots {
                Mode::Markers
            } else if s.markers {
                Mode::LinesMarkers
            } else {
                Mode::Lines
            };
            let mut t = Scatter::new(xs.clone(), ys)
                .name(s.name.clone())
                .mode(mode)
                .line(Line::new().color(s.color.rgb()).width(2.0))
                .marker(Marker::new().color(s.color.rgb()).size(7));
            if !time_like {
                t = t.hover_template(value_hover(&s.name));
            }
            if nines {
                t = t.text_array(xs.iter().map(|v| nines_label(*v)).collect());
            }
            if s.secondary {
                t = t.x_axis("x2").y_axis("y2");
            }
            plot.add_trace(t);
        }

        for limit in &self.limits {
            let mut t = Scatter::new(vec![x_lo, x_hi], vec![limit.y, limit.y])
                .name(limit.label.clone())
                .mode(Mode::Lines)
                .line(Line::new().color(limit.color.rgb()).width(1.5).dash(DashType::Dash))
                .hover_template(format!("{}: %{{y:.4~g}}<extra></extra>", hover_escape(&limit.label)));
            if limit.secondary {
                t = t.x_axis("x2").y_axis("y2");
            }
            plot.add_trace(t);
        }

        // Bands last, so the legend lists the lines and limits first (their light fill barely tints the
        // lines): one trace per label and panel, its spans separated by gaps, spanning the
        // panel's height.
        let mut labels: Vec<(&str, Colour)> = Vec::new();
        for b in &self.bands {
            if !labels.iter().any(|(l, _)| *l == b.label) {
                labels.push((&b.label, b.color));
            }
        }
        for &secondary in panels {
            let plan = if secondary { self.y_plan(true) } else { y.clone_plan() };
            let (lo, hi) = plan.data_range();
            for (label, colour) in &labels {
                let (mut xs, mut ys) = (Vec::new(), Vec::new());
                for b in self.bands.iter().filter(|b| b.label == *label) {
                    xs.extend([Some(b.from), Some(b.from), Some(b.to), Some(b.to), Some(b.from), None]);
                    ys.extend([Some(lo), Some(hi), Some(hi), Some(lo), Some(lo), None]);
                }
                let mut t = Scatter::new(xs, ys)
                    .name(*label)
                    .legend_group(*label)
                    .show_legend(!secondary)
                    .mode(Mode::Lines)
                    .fill(Fill::ToSelf)
                    .fill_color(colour.rgba(0.16))
                    .line(Line::new().width(0.0).color(colour.rgba(0.0)))
                    .hover_info(HoverInfo::Skip);
                if secondary {
                    t = t.x_axis("x2").y_axis("y2");
                }
                plot.add_trace(t);
            }
        }

        let grid = Colour(232, 232, 232);
        let axis = |plan: &AxisPlan, title: &str| {
            let mut a = Axis::new()
                .title(Title::with_text(title))
                .type_(if plan.log { AxisType::Log } else { AxisType::Linear })
                .range(plan.range.clone())
                .auto_margin(true)
                .show_line(true)
                .line_color(INK.rgb())
                .ticks(TicksDirection::Outside)
                .tick_color(INK.rgb())
                .grid_color(grid.rgb())
                .zero_line(false)
                .hover_format(".4~g")
                .tick_font(Font::new().size(13));
            if let Some((values, text)) = &plan.ticks {
                a = a.tick_values(values.clone()).tick_text(text.clone());
            }
            a
        };
        // Time charts: a vertical line at the hovered time across the panel (and, by the
        // page's script, across every chart of its `x_group`).
        let x_axis = |plan: &AxisPlan, title: &str| {
            let a = axis(plan, title);
            if !time_like {
                return a;
            }
            a.show_spikes(true)
                .spike_mode(SpikeMode::Across)
                .spike_snap(SpikeSnap::HoveredData)
                .spike_color(INK.rgba(0.6))
                .spike_thickness(1)
                .spike_dash(DashType::Solid)
        };
        let mut layout = base_layout(
            match (two, self.small) {
                (true, _) => HEIGHT_TWO_PANELS,
                (false, true) => HEIGHT_SMALL,
                (false, false) => HEIGHT,
            },
            50,
            if time_like {
                HoverMode::XUnified
            } else {
                HoverMode::Closest
            },
        );
        if two {
            let split = LOWER_PANEL;
            layout = layout
                .x_axis(x_axis(&x, "").anchor("y").show_tick_labels(false))
                .y_axis(axis(&y, &self.y_label).domain(&[split + 0.08, 1.0]))
                .x_axis2(x_axis(&x, &self.x_label).anchor("y2").matches("x"))
                .y_axis2(
                    axis(&self.y_plan(true), self.y2_label.as_deref().unwrap_or(""))
                        .domain(&[0.0, split])
                        .anchor("x2"),
                );
        } else {
            layout = layout.x_axis(x_axis(&x, &self.x_label)).y_axis(axis(&y, &self.y_label));
        }
        plot.set_layout(layout);
        plot.set_configuration(config(&self.title));
        plot
    }
}

/// What every figure's layout shares: its height, the page's font, the legend in a row above
/// the plot (never on the data), the toolbar on the side, white backgrounds; `bottom` pixels
/// under the plot for the x axis.
pub fn base_layout(height: usize, bottom: usize, hover: HoverMode) -> Layout {
    Layout::new()
        .height(height)
        .font(
            Font::new()
                .family("system-ui, -apple-system, Segoe UI, Roboto, sans-serif")
                .size(13),
        )
        .margin(Margin::new().left(60).right(40).top(10).bottom(bottom))
        .show_legend(true)
        .mode_bar(ModeBar::new().orientation(Orientation::Vertical))
        .legend(
            Legend::new()
                .orientation(Orientation::Horizontal)
                .x(0.0)
                .x_anchor(Anchor::Left)
                .y(1.02)
                .y_anchor(Anchor::Bottom)
                .font(Font::new().size(12)),
        )
        .hover_mode(hover)
        .paper_background_color(Colour(255, 255, 255).rgb())
        .plot_background_color(Colour(255, 255, 255).rgb())
}

/// What every figure's toolbar does: no plotly logo, resize with the page, PNG export at
/// twice the size named after the chart.
pub fn config(title: &str) -> Configuration {
    use plotly::configuration::{ImageButtonFormats, ToImageButtonOptions};
    Configuration::new()
        .responsive(true)
        .display_logo(false)
        .to_image_button_options(
            ToImageButtonOptions::new()
                .format(ImageButtonFormats::Png)
                .filename(&file_name(title))
                .scale(2),
        )
}

/// A chart title as a file name: `Checkpoint age and dirty pages` → `checkpoint-age-and-dirty-pages`.
fn file_name(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    let end = out.char_indices().nth(80).map_or(out.len(), |(i, _)| i);
    out[..end].trim_end_matches('-').to_string()
}

/// Plotly hover templates read `%{...}` as a placeholder and `<` as markup.
fn hover_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace("%{", "% {")
}

impl AxisPlan {
    fn clone_plan(&self) -> AxisPlan {
        AxisPlan {
            log: self.log,
            range: self.range.clone(),
            ticks: self.ticks.clone(),
        }
    }

    /// The range in data units (log axes' ranges are powers of ten).
    fn data_range(&self) -> (f64, f64) {
        let (a, b) = (self.range[0], self.range[1]);
        if self.log {
            (10f64.powf(a), 10f64.powf(b))
        } else {
            (a, b)
        }
    }
}

/// A log axis over the data's `lo..hi`, ticked by [`log_ticks`]: it spans its end ticks (so
/// the data lies between two labels) with a small margin, so no marker sits on its edge.
fn log_plan(lo: f64, hi: f64, label: impl Fn(f64) -> String) -> AxisPlan {
    let (lo, hi) = positive(lo, hi);
    let values = log_ticks(lo, hi);
    let (first, last) = (values[0].log10(), values[values.len() - 1].log10());
    let pad = 0.02 * (last - first);
    let text = values.iter().map(|v| label(*v)).collect();
    AxisPlan {
        log: true,
        range: vec![first - pad, last + pad],
        ticks: Some((values, text)),
    }
}

/// Tick values for a log axis over the data's `lo..hi` (both > 0), the one rule of every log
/// axis: the 1, 2, 5 × 10^k values from the largest at or below `lo` to the smallest at or
/// above `hi`, so the lowest and highest values are enclosed by labelled ticks (over more
/// than four decades only the powers of ten); where that leaves fewer than four, the 1.5, 3,
/// 4, 6, 8 steps between them as well: 451..1257 TPS → 200, 500, 1000, 2000.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let coarse: &[f64] = if hi / lo > 1e4 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let all = |steps: &[f64]| -> Vec<f64> {
        (lo.log10().floor() as i32 - 1..=hi.log10().ceil() as i32 + 1)
            .flat_map(|e| steps.iter().map(move |m| clean(m * 10f64.powi(e))))
            .collect()
    };
    let near = |t: f64, v: f64| (t - v).abs() <= v * 1e-9;
    let candidates = all(coarse);
    let below = candidates
        .iter()
        .copied()
        .filter(|t| *t <= lo || near(*t, lo))
        .fold(f64::NAN, f64::max);
    let above = candidates
        .iter()
        .copied()
        .filter(|t| *t >= hi || near(*t, hi))
        .fold(f64::NAN, f64::min);
    let inside = |steps: &[f64]| -> Vec<f64> {
        all(steps)
            .into_iter()
            .filter(|t| *t >= below * (1.0 - 1e-9) && *t <= above * (1.0 + 1e-9))
            .collect()
    };
    let ticks = inside(coarse);
    if ticks.len() >= 4 || hi / lo > 1e4 {
        return ticks;
    }
    inside(&[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0])
}

/// `m × 10^e` without binary noise (0.30000000000000004 → 0.3).
fn clean(v: f64) -> f64 {
    format!("{v:.12e}").parse().unwrap_or(v)
}

/// A positive range: a non-positive `lo` becomes a thousandth of `hi`.
fn positive(lo: f64, hi: f64) -> (f64, f64) {
    let lo = if lo > 0.0 { lo } else { hi.max(1e-3) / 1000.0 };
    (lo, hi.max(lo))
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
    use serde_json::Value;

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

    fn json(c: &Chart) -> Value {
        serde_json::from_str(&c.figure().to_json()).unwrap()
    }

    #[test]
    fn a_chart_is_a_figure_with_its_axis_units_and_legend() {
        let f = json(&tps_chart());
        assert_eq!(f["layout"]["xaxis"]["title"]["text"], "time (s)");
        assert_eq!(f["layout"]["yaxis"]["title"]["text"], "transactions/s");
        let names: Vec<&str> = f["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["TPS", "warmup"]);
        // The legend is outside the plot, above it.
        assert!(f["layout"]["legend"]["y"].as_f64().unwrap() > 1.0);
        assert_eq!(f["config"]["displaylogo"], false);
        // A time chart's hover is one vertical line across the panel.
        assert_eq!(f["layout"]["hovermode"], "x unified");
        assert_eq!(
            (&f["layout"]["xaxis"]["showspikes"], &f["layout"]["xaxis"]["spikemode"]),
            (&Value::Bool(true), &Value::from("across"))
        );
    }

    #[test]
    fn the_lower_panel_shares_x_and_keeps_its_fixed_range() {
        let mut c = tps_chart();
        c.y2_label = Some("dirty pages (%)".into());
        c.y2_range = Some((0.0, 100.0));
        c.series
            .push(Series::new("dirty", PALETTE[1], vec![(0.0, 0.2), (29.0, 0.55)]).below());
        c.limits.push(Limit {
            y: 90.0,
            label: "max dirty".into(),
            color: STALL,
            secondary: true,
        });
        let f = json(&c);
        assert_eq!(f["layout"]["yaxis2"]["range"], serde_json::json!([0.0, 100.0]));
        assert_eq!(f["layout"]["xaxis2"]["matches"], "x");
        let dirty = f["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "dirty")
            .unwrap();
        assert_eq!(
            (dirty["xaxis"].as_str(), dirty["yaxis"].as_str()),
            (Some("x2"), Some("y2"))
        );
        // The warmup is shaded in both panels, one legend entry.
        let warm: Vec<&Value> = f["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"] == "warmup")
            .collect();
        assert_eq!(warm.len(), 2);
    }

    #[test]
    fn log_axes_have_1_2_5_ticks_enclosing_the_data() {
        // read_write's TPS by users, 452..1257: 1000 was the top label, with data above it.
        assert_eq!(log_ticks(451.66, 1257.32), [200.0, 500.0, 1000.0, 2000.0]);
        // A p99 axis labelled 2, 5, 10 with data to 14.2 ms.
        assert_eq!(log_ticks(1.6, 14.2), [1.0, 2.0, 5.0, 10.0, 20.0]);
        assert_eq!(log_ticks(590.8, 3005.8), [500.0, 1000.0, 2000.0, 5000.0]);
        assert_eq!(log_ticks(12.0, 42.0), [10.0, 15.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(log_ticks(101.0, 104.0), [100.0, 150.0, 200.0]);
        assert_eq!(log_ticks(0.4, 22.0), [0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        assert_eq!(
            log_ticks(2.0, 5.0),
            [2.0, 3.0, 4.0, 5.0],
            "values on ticks are their own labels"
        );
        assert_eq!(log_ticks(3.0, 900_000.0), [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]);
        for (lo, hi) in [(451.66, 1257.32), (1.6, 14.2), (0.013, 0.9), (7.0, 7.0), (3.0, 9e5)] {
            let t = log_ticks(lo, hi);
            assert!(t[0] <= lo && *t.last().unwrap() >= hi, "{lo}..{hi}: {t:?}");
            let plan = log_plan(lo, hi, short_number);
            let (a, b) = (plan.range[0], plan.range[1]);
            assert!(
                a < t[0].log10() && b > t.last().unwrap().log10(),
                "{lo}..{hi}: the axis shows its end ticks"
            );
        }
        let p99 = json(&{
            let mut c = Chart::new("p99 by users", "users", "p99 (ms)");
            (c.x_scale, c.y_scale) = (Scale::Log2, Scale::Log);
            c.series
                .push(Series::new("a", PALETTE[0], vec![(1.0, 1.6), (16.0, 14.2)]));
            c
        });
        assert_eq!(
            p99["layout"]["yaxis"]["ticktext"],
            serde_json::json!(["1", "2", "5", "10", "20"])
        );
        let mut spectrum = Chart::new("Latency by percentile", "percentile", "latency (ms)");
        spectrum.x_scale = Scale::Nines;
        spectrum.y_scale = Scale::Log;
        spectrum.series.push(Series::new(
            "run",
            PALETTE[0],
            vec![(1.0, 0.8), (2.0, 1.0), (100.0, 5.0), (1000.0, 40.0)],
        ));
        let f = json(&spectrum);
        assert_eq!(f["layout"]["yaxis"]["type"], "log");
        assert_eq!(
            f["layout"]["yaxis"]["tickvals"],
            serde_json::json!([0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0])
        );
        let x = &f["layout"]["xaxis"]["ticktext"];
        assert_eq!(x, &serde_json::json!(["0%", "50%", "90%", "99%", "99.9%"]));
    }

    #[test]
    fn an_empty_chart_says_so_and_still_draws() {
        let c = Chart::new("Nothing", "x", "y");
        assert!(c.is_empty());
        let _ = c.figure().to_json();
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
        assert_eq!(
            file_name("Checkpoint age and dirty pages"),
            "checkpoint-age-and-dirty-pages"
        );
    }
}
