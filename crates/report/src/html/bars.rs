//! Grouped bars with min/max whiskers ([`BarChart`]), made into a plotly figure: the
//! published per-query chart of TPC-H results, each query's time on every server normalised to
//! the baseline server, the band of draws around 1 shaded, timeouts marked.

use plotly::common::{DashType, ErrorData, ErrorType, Fill, HoverInfo, Line, Marker, Mode, Title};
use plotly::layout::{Axis, BarMode, HoverMode, TicksDirection};
use plotly::{Bar as BarTrace, Plot, Scatter};
use serde::Serialize;

use super::chart::{base_layout, config, INK, PALETTE};

/// One bar: the median and its range, or a timeout.
#[derive(Debug, Clone, Serialize)]
pub struct Bar {
    /// Height (e.g. the median relative to the baseline).
    pub value: f64,
    /// Lower whisker.
    pub low: f64,
    /// Upper whisker.
    pub high: f64,
    /// Did not finish: drawn to the top of the chart and labelled with this text (`>7200s`).
    pub timed_out: Option<String>,
}

/// The bars of one series (one server), one per category (`None`: not measured).
#[derive(Debug, Clone, Serialize)]
pub struct BarSeries {
    /// Legend text.
    pub name: String,
    /// One per category.
    pub bars: Vec<Option<Bar>>,
}

/// A grouped bar chart.
#[derive(Debug, Clone, Serialize)]
pub struct BarChart {
    /// Caption.
    pub title: String,
    /// Y axis description with its unit.
    pub y_label: String,
    /// Category labels along x (`Q1` .. `Q22`).
    pub categories: Vec<String>,
    /// Series, drawn side by side within each category.
    pub series: Vec<BarSeries>,
    /// A reference line (1.0: the baseline) with its label.
    pub reference: Option<(f64, String)>,
    /// A shaded band of y (the draws: 0.95..1.05).
    pub band: Option<(f64, f64)>,
    /// A fixed y range (the zoomed view around 1 of the studies' second chart): bars beyond
    /// it are cut at its edge and labelled with their value.
    pub zoom: Option<(f64, f64)>,
}

impl BarChart {
    /// Whether there is no bar at all.
    pub fn is_empty(&self) -> bool {
        self.series.iter().all(|s| s.bars.iter().all(Option::is_none))
    }

    fn top(&self) -> f64 {
        let finished = self
            .series
            .iter()
            .flat_map(|s| s.bars.iter().flatten())
            .filter(|b| b.timed_out.is_none())
            .map(|b| b.high.max(b.value));
        let reference = self.reference.iter().map(|r| r.0);
        let band = self.band.iter().map(|b| b.1);
        finished.chain(reference).chain(band).fold(0.0, f64::max).max(1e-9) * 1.15
    }

    /// The chart as a plotly figure: categories at 0, 1, 2 ... labelled with their names.
    pub fn figure(&self) -> Plot {
        let n = self.categories.len().max(1) as f64;
        let (bottom, top) = self.zoom.unwrap_or((0.0, self.top()));
        let mut plot = Plot::new();
        if let Some((lo, hi)) = self.band {
            plot.add_trace(
                Scatter::new(vec![-0.5, -0.5, n - 0.5, n - 0.5, -0.5], vec![lo, hi, hi, lo, lo])
                    .name(format!("draw ({lo} .. {hi})"))
                    .mode(Mode::Lines)
                    .fill(Fill::ToSelf)
                    .fill_color(PALETTE[6].rgba(0.15))
                    .line(Line::new().width(0.0).color(PALETTE[6].rgba(0.0)))
                    .hover_info(HoverInfo::Skip),
            );
        }
        for (si, s) in self.series.iter().enumerate() {
            let color = PALETTE[si % PALETTE.len()];
            let (mut x, mut y, mut plus, mut minus) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let (mut tx, mut ty, mut text) = (Vec::new(), Vec::new(), Vec::new());
            let (mut cx, mut cy, mut cut) = (Vec::new(), Vec::new(), Vec::new());
            for (ci, bar) in s.bars.iter().enumerate() {
                let Some(bar) = bar else { continue };
                if let Some(t) = &bar.timed_out {
                    tx.push(ci as f64);
                    ty.push(top);
                    text.push(t.clone());
                } else {
                    if self.zoom.is_some() && (bar.value > top || bar.value < bottom) {
                        cx.push(ci as f64);
                        cy.push(bar.value.clamp(bottom, top));
                        cut.push(format!("{:.2}", bar.value));
                    }
                    x.push(ci as f64);
                    y.push(bar.value);
                    plus.push((bar.high - bar.value).max(0.0));
                    minus.push((bar.value - bar.low).max(0.0));
                }
            }
            let group = format!("s{si}");
            plot.add_trace(
                BarTrace::new(x, y)
                    .name(s.name.clone())
                    .legend_group(group.clone())
                    .offset_group(group.clone())
                    .marker(Marker::new().color(color.rgba(0.85)))
                    .error_y(
                        ErrorData::new(ErrorType::Data)
                            .array(plus)
                            .array_minus(minus)
                            .color(INK.rgb())
                            .thickness(1.2)
                            .width(3),
                    )
                    .hover_template(format!("%{{y:.3~g}}<extra>{}</extra>", s.name.replace('<', "&lt;"))),
            );
            if !cut.is_empty() {
                plot.add_trace(
                    Scatter::new(cx, cy)
                        .name(format!("{}: beyond the zoom", s.name))
                        .legend_group(group.clone())
                        .show_legend(false)
                        .mode(Mode::Text)
                        .text_array(cut)
                        .text_position(plotly::common::Position::BottomCenter)
                        .hover_info(HoverInfo::Text),
                );
            }
            if !text.is_empty() {
                plot.add_trace(
                    BarTrace::new(tx, ty)
                        .name(format!("{}: did not finish", s.name))
                        .legend_group(group.clone())
                        .offset_group(group)
                        .show_legend(false)
                        .marker(Marker::new().color(color.rgba(0.25)))
                        .text_array(text)
                        .text_position(plotly::common::TextPosition::Inside)
                        .hover_template(format!("%{{text}}<extra>{}</extra>", s.name.replace('<', "&lt;"))),
                );
            }
        }
        if let Some((y, text)) = &self.reference {
            plot.add_trace(
                Scatter::new(vec![-0.5, n - 0.5], vec![*y, *y])
                    .name(text.clone())
                    .mode(Mode::Lines)
                    .line(Line::new().color(INK.rgb()).width(1.5).dash(DashType::Dash))
                    .hover_info(HoverInfo::Skip),
            );
        }
        let layout = base_layout(400, 40, HoverMode::Closest)
            .bar_mode(BarMode::Group)
            .x_axis(
                Axis::new()
                    .tick_values((0..self.categories.len()).map(|i| i as f64).collect())
                    .tick_text(self.categories.clone())
                    .range(vec![-0.5, n - 0.5])
                    .show_grid(false)
                    .show_line(true)
                    .line_color(INK.rgb())
                    .auto_margin(true),
            )
            .y_axis(
                Axis::new()
                    .title(Title::with_text(&self.y_label))
                    .range(vec![bottom, top])
                    .show_line(true)
                    .line_color(INK.rgb())
                    .ticks(TicksDirection::Outside)
                    .grid_color(super::chart::Colour(232, 232, 232).rgb())
                    .auto_margin(true),
            );
        plot.set_layout(layout);
        plot.set_configuration(config(&self.title));
        plot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_whiskers_timeouts_and_the_draw_band_are_drawn() {
        let bar = |v: f64| {
            Some(Bar {
                value: v,
                low: v * 0.9,
                high: v * 1.1,
                timed_out: None,
            })
        };
        let c = BarChart {
            title: "TPC-H power test, relative to A".into(),
            y_label: "time relative to A".into(),
            categories: vec!["Q1".into(), "Q2".into(), "Q3".into()],
            series: vec![
                BarSeries {
                    name: "A".into(),
                    bars: vec![bar(1.0), bar(1.0), bar(1.0)],
                },
                BarSeries {
                    name: "B".into(),
                    bars: vec![
                        bar(0.5),
                        None,
                        Some(Bar {
                            value: 0.0,
                            low: 0.0,
                            high: 0.0,
                            timed_out: Some(">60s".into()),
                        }),
                    ],
                },
            ],
            reference: Some((1.0, "A (baseline)".into())),
            band: Some((0.95, 1.05)),
            zoom: None,
        };
        assert!(!c.is_empty());
        let fig = c.figure().to_json();
        for text in [
            "\"Q1\"",
            "\"Q3\"",
            ">60s",
            "A (baseline)",
            "draw (0.95 .. 1.05)",
            "time relative to A",
        ] {
            assert!(fig.contains(text), "{text} missing");
        }
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["series"][1]["bars"][2]["timed_out"], ">60s");
        // Zoomed around 1: the axis is the zoom's, B's 0.5 is cut at its edge and labelled.
        let zoomed = BarChart {
            zoom: Some((0.8, 1.2)),
            ..c
        };
        let fig: serde_json::Value = serde_json::from_str(&zoomed.figure().to_json()).unwrap();
        assert_eq!(fig["layout"]["yaxis"]["range"], serde_json::json!([0.8, 1.2]));
        let cut = fig["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "B: beyond the zoom")
            .unwrap();
        assert_eq!(cut["text"], serde_json::json!(["0.50"]));
        assert_eq!(cut["y"], serde_json::json!([0.8]));
    }
}
