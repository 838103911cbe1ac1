//! The HTML page a report is written into: escaped text, headings, tables, inline SVG charts
//! (each followed by its data as a JSON island), and collapsible sections, with a small
//! embedded stylesheet. Nothing refers to the network and no script runs.

use std::fmt::Write;

use super::bars::BarChart;
use super::chart::{Chart, ChartError};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222;padding:0 1em}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}\
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right;vertical-align:top}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
.chart{margin:1em 0}.note{color:#555}.stall{color:#b3261e}\
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}code{font-size:.9em}";

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A page being written.
#[derive(Debug)]
pub struct Page {
    title: String,
    body: String,
    charts: usize,
}

impl Page {
    /// An empty page titled `title` (also its first heading).
    pub fn new(title: &str) -> Page {
        Page {
            title: title.to_string(),
            body: format!("<h1>{}</h1>\n", escape(title)),
            charts: 0,
        }
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) {
        let _ = writeln!(self.body, "<h2>{}</h2>", escape(text));
    }

    /// A paragraph of text, with a CSS class (`note`, `stall`) or none.
    pub fn paragraph(&mut self, text: &str, class: Option<&str>) {
        match class {
            Some(c) => {
                let _ = writeln!(self.body, "<p class=\"{c}\">{}</p>", escape(text));
            }
            None => {
                let _ = writeln!(self.body, "<p>{}</p>", escape(text));
            }
        }
    }

    /// A table: a header row, then rows of cells (text, escaped here).
    pub fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        self.body.push_str(&table_html(header, rows));
    }

    /// A chart as inline SVG; an empty chart is left out. Returns whether it was drawn.
    pub fn chart(&mut self, chart: &Chart) -> Result<bool, ChartError> {
        if chart.is_empty() {
            return Ok(false);
        }
        let svg = chart.svg()?;
        let data = serde_json::to_string(chart).expect("a chart serializes");
        self.figure(&chart.title, &svg, &data);
        Ok(true)
    }

    /// A bar chart as inline SVG, followed by its data; an empty one is left out.
    pub fn bar_chart(&mut self, chart: &BarChart) -> Result<bool, ChartError> {
        if chart.is_empty() {
            return Ok(false);
        }
        let svg = chart.svg()?;
        let data = serde_json::to_string(chart).expect("a chart serializes");
        self.figure(&chart.title, &svg, &data);
        Ok(true)
    }

    fn figure(&mut self, title: &str, svg: &str, data: &str) {
        self.charts += 1;
        // The data behind the chart, for programs (a JSON island: not executed). `</` is
        // escaped so no value can end the element early.
        let data = data.replace("</", "<\\/");
        let _ = writeln!(
            self.body,
            "<div class=\"chart\" id=\"chart-{n}\" data-title=\"{}\">{svg}</div>\n\
             <script type=\"application/json\" class=\"chart-data\" id=\"chart-{n}-data\">{data}</script>",
            escape(title),
            n = self.charts,
        );
    }

    /// A collapsed section whose content is already HTML.
    pub fn details(&mut self, summary: &str, inner_html: &str) {
        let _ = writeln!(
            self.body,
            "<details><summary>{}</summary>\n{inner_html}</details>",
            escape(summary)
        );
    }

    /// HTML made elsewhere (escaped there), as is.
    pub fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// Charts drawn so far.
    pub fn charts(&self) -> usize {
        self.charts
    }

    /// The whole document.
    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
             <meta name=\"generator\" content=\"dbperf {}\">\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
            escape(&self.title),
            env!("CARGO_PKG_VERSION"),
            self.body
        )
    }
}

/// A table as HTML (cells escaped).
pub fn table_html(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_the_page_is_whole() {
        let mut p = Page::new("a <b> & \"c\"");
        p.paragraph("x < y", Some("note"));
        p.table(&["k".into(), "v".into()], &[vec!["<script>".into(), "1".into()]]);
        let html = p.finish();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<h1>a &lt;b&gt; &amp; &quot;c&quot;</h1>"));
        assert!(html.contains("<td>&lt;script&gt;</td>"));
        assert!(!html.contains("<script>"));
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "nothing from the network"
        );
        assert!(html.trim_end().ends_with("</html>"));
    }
}
