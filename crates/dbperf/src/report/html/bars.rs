//! Grouped bars with min/max whiskers ([`BarChart`]), drawn to SVG with plotters: the
//! published per-query chart of TPC-H results, each query's time on every server normalised to
//! the baseline server, the band of draws around 1 shaded, timeouts marked.

use plotters::prelude::*;
use serde::Serialize;

use super::chart::{short_number, ChartError, PALETTE};

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
}

impl BarChart {
    /// Whether there is no bar at all.
    pub fn is_empty(&self) -> bool {
        self.series.iter().all(|s| s.bars.iter().all(Option::is_none))
    }

    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> Result<String, ChartError> {
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, (960, 360)).into_drawing_area();
            self.draw(&root)
                .map_err(|e| ChartError::new(&self.title, e.to_string()))?;
            root.present()
                .map_err(|e| ChartError::new(&self.title, e.to_string()))?;
        }
        Ok(out)
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

    fn draw(
        &self,
        root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    ) -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        let n = self.categories.len().max(1) as f64;
        let top = self.top();
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..n, 0.0..top)?;
        let categories = self.categories.clone();
        let label = move |v: &f64| {
            // A category's label sits at its middle.
            let i = (v - 0.5).round();
            if (v - 0.5 - i).abs() < 1e-6 && i >= 0.0 {
                categories.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(self.categories.len() * 2 + 1)
            .x_label_formatter(&label)
            .y_desc(&self.y_label)
            .y_label_formatter(&|v| short_number(*v))
            .axis_desc_style(("sans-serif", 13))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        if let Some((lo, hi)) = self.band {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, lo), (n, hi)],
                    PALETTE[6].mix(0.15).filled(),
                )))?
                .label(format!("draw ({lo} .. {hi})"))
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], PALETTE[6].mix(0.3).filled()));
        }
        let k = self.series.len().max(1) as f64;
        let width = 0.8 / k;
        for (si, s) in self.series.iter().enumerate() {
            let color = PALETTE[si % PALETTE.len()];
            let mut legend_drawn = false;
            for (ci, bar) in s.bars.iter().enumerate() {
                let Some(bar) = bar else { continue };
                let x0 = ci as f64 + 0.1 + si as f64 * width;
                let (x1, mid) = (x0 + width * 0.9, x0 + width * 0.45);
                let height = if bar.timed_out.is_some() { top } else { bar.value };
                let style = if bar.timed_out.is_some() {
                    color.mix(0.25).filled()
                } else {
                    color.mix(0.85).filled()
                };
                let drawn = chart.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, height)], style)))?;
                if !legend_drawn {
                    legend_drawn = true;
                    drawn
                        .label(&s.name)
                        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled()));
                }
                if let Some(text) = &bar.timed_out {
                    chart.draw_series(std::iter::once(Text::new(
                        text.clone(),
                        (x0, top * 0.97),
                        ("sans-serif", 11).into_font().color(&BLACK),
                    )))?;
                } else if bar.high > bar.low {
                    let cap = width * 0.2;
                    let lines = [
                        vec![(mid, bar.low), (mid, bar.high)],
                        vec![(mid - cap, bar.low), (mid + cap, bar.low)],
                        vec![(mid - cap, bar.high), (mid + cap, bar.high)],
                    ];
                    chart.draw_series(lines.into_iter().map(|l| PathElement::new(l, BLACK.stroke_width(1))))?;
                }
            }
        }
        if let Some((y, text)) = &self.reference {
            chart
                .draw_series(DashedLineSeries::new([(0.0, *y), (n, *y)], 6, 4, BLACK.stroke_width(1)))?
                .label(text)
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 12))
            .draw()?;
        Ok(())
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
        };
        assert!(!c.is_empty());
        let svg = c.svg().unwrap();
        for text in [
            "Q1",
            "Q3",
            "&gt;60s",
            "A (baseline)",
            "draw (0.95 .. 1.05)",
            "time relative to A",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["series"][1]["bars"][2]["timed_out"], ">60s");
    }
}
