//! The HTML page a report is written into: escaped text, headings, tables (with `n/a`
//! footnotes: [`Cell`]), interactive charts (each a plotly figure as a JSON island, followed by
//! the chart's data as another), rows of small multiples, blocks chosen by a selector, and
//! collapsible sections, with a small embedded stylesheet. plotly.js (its basic bundle, which
//! `build.rs` obtains) is inlined once per page, with a few lines that draw every figure and
//! add an SVG download to each toolbar; nothing is fetched from the network, and a report with
//! charts stays under [`MAX_REPORT_BYTES`].

use std::borrow::Cow;
use std::fmt::Write;

use super::bars::BarChart;
use super::chart::{Chart, ChartError};

/// Draws each figure island into the element it names. The toolbar's downloads (PNG at twice
/// the size, SVG) export the chart 1000 pixels wide with its title, as a blog post shows it.
/// Hovering a chart of an x group (`data-group`) hovers the same x in every panel of every
/// chart of the group, so one vertical line crosses them all. A points selector
/// ([`Page::point_selector`]) shows the block of the value chosen and hides the others.
/// Printed, the charts are drawn 680 pixels wide (within an A4 or Letter page's margins; small
/// multiples half that, two a row), then as wide as the page again.
const DRAW: &str = r#"(function(){
function save(format){return function(gd){
var title=gd.dataset.title||'',top=(gd._fullLayout&&gd._fullLayout._size?gd._fullLayout._size.t:10)+40;
var layout=Object.assign({},gd.layout,{title:{text:title,x:0.01,xanchor:'left',y:0.99,yanchor:'top',yref:'container',font:{size:16}},
margin:Object.assign({},gd.layout.margin,{t:top}),height:(gd.layout.height||380)+40,width:1000});
Plotly.downloadImage({data:gd.data,layout:layout},{format:format,width:1000,height:layout.height,scale:format==='png'?2:1,filename:gd.dataset.file||'chart'});};}
var png={name:'Download plot as PNG',icon:Plotly.Icons.camera,click:save('png')};
var svg={name:'Download plot as SVG',icon:Plotly.Icons.disk||Plotly.Icons.camera,click:save('svg')};
var groups={},linking=false;
function panels(gd){return Object.keys(gd._fullLayout._plots||{xy:1});}
function each(g,f){linking=true;try{groups[g].forEach(f);}finally{linking=false;}}
function link(gd,g){(groups[g]=groups[g]||[]).push(gd);
gd.on('plotly_hover',function(e){if(linking||!e.points||!e.points.length)return;var x=e.xvals?e.xvals[0]:e.points[0].x;
each(g,function(o){if(o!==gd||panels(o).length>1)Plotly.Fx.hover(o,{xval:x},panels(o));});});
gd.on('plotly_unhover',function(){if(!linking)each(g,function(o){if(o!==gd)Plotly.Fx.unhover(o);});});}
document.querySelectorAll('script.chart-figure').forEach(function(s){
var f=JSON.parse(s.textContent),gd=document.getElementById(s.dataset.plot),c=f.config||{};
gd.dataset.file=(c.toImageButtonOptions||{}).filename||'chart';gd.dataset.title=s.dataset.title||'';
c.modeBarButtonsToRemove=['toImage','select2d','lasso2d'];c.modeBarButtonsToAdd=[png,svg];
Plotly.newPlot(gd,f.data,f.layout,c);if(s.dataset.group)link(gd,s.dataset.group);});
function width(w){document.querySelectorAll('.plot.js-plotly-plot').forEach(function(gd){Plotly.relayout(gd,w?{width:gd.closest('.multiples')?Math.floor(w/2)-8:w}:{width:null,autosize:true});});}
document.querySelectorAll('select.points').forEach(function(sel){var blocks=document.querySelectorAll('.point[data-points="'+sel.dataset.points+'"]');
function show(){blocks.forEach(function(b){var was=b.hidden;b.hidden=b.dataset.value!==sel.value;if(was&&!b.hidden)b.querySelectorAll('.plot.js-plotly-plot').forEach(function(gd){Plotly.Plots.resize(gd);});});}
sel.addEventListener('change',show);show();});
window.addEventListener('beforeprint',function(){width(680);});window.addEventListener('afterprint',function(){width(0);});})();"#;

/// The page's look on screen, then in print: each chart whole on a page, tables within the
/// page's width (smaller type, cells wrapped), no toolbars or scrollbars, small multiples two a
/// row, every block of a points selector shown (the selector not); [`PRINT`] opens the
/// collapsed sections, [`DRAW`] draws the charts at the printed width.
const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222;padding:0 1em}\
h1{font-size:1.5em;overflow-wrap:anywhere}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em;display:block;overflow-x:auto;max-width:100%}\
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right;vertical-align:top}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
.chart{margin:1.5em 0}.chart-title{font-weight:600;margin:0 0 .2em}.plot{width:100%;min-height:200px}.note{color:#555}.stall{color:#b3261e}\
.detail{font-size:.8em;color:#666}\
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:0 1em}.multiples .chart{margin:.5em 0;min-width:0}\
.point-select{font-weight:600}.point-select select{font:inherit;margin-left:.4em}\
ol.footnotes{font-size:.85em;color:#555;margin:-.5em 0 1em;padding-left:1.6em}\
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}code{font-size:.9em}\
@page{margin:12mm}\
@media print{body{margin:0;max-width:none;padding:0;font-size:10pt}h1{margin-top:0}h2{margin-top:1.2em}\
h2,h3,.chart-title,summary{break-after:avoid}.chart{break-inside:avoid;margin:.8em 0}tr,pre{break-inside:avoid}\
table{display:table;overflow:visible;font-size:7.5pt;max-width:100%}th,td{padding:.1em .3em;overflow-wrap:break-word}\
pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:7.5pt}\
.multiples{grid-template-columns:1fr 1fr}.point[hidden]{display:block!important}.point-select{display:none}.modebar-container,.hoverlayer{display:none!important}\
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}";

/// Printing: every collapsed section opened, closed again afterwards.
const PRINT: &str = r#"(function(){var opened=[];
window.addEventListener('beforeprint',function(){document.querySelectorAll('details:not([open])').forEach(function(d){d.open=true;opened.push(d);});});
window.addEventListener('afterprint',function(){opened.forEach(function(d){d.open=false;});opened=[];});})();"#;

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

    /// A table of [`Cell`]s, its `n/a` reasons as footnotes under it ([`cells_table_html`]).
    pub fn cells_table(&mut self, header: &[String], rows: &[Vec<Cell>]) {
        self.body.push_str(&cells_table_html(header, rows));
    }

    /// A chart, followed by its data; an empty chart is left out. Returns whether it was drawn.
    pub fn chart(&mut self, chart: &Chart) -> Result<bool, ChartError> {
        if chart.is_empty() {
            return Ok(false);
        }
        let data = serde_json::to_string(chart).expect("a chart serializes");
        self.figure(&chart.title, chart.x_group.as_deref(), &chart.figure().to_json(), &data);
        Ok(true)
    }

    /// A bar chart, followed by its data; an empty one is left out.
    pub fn bar_chart(&mut self, chart: &BarChart) -> Result<bool, ChartError> {
        if chart.is_empty() {
            return Ok(false);
        }
        let data = serde_json::to_string(chart).expect("a chart serializes");
        self.figure(&chart.title, None, &chart.figure().to_json(), &data);
        Ok(true)
    }

    fn figure(&mut self, title: &str, x_group: Option<&str>, figure: &str, data: &str) {
        self.charts += 1;
        // JSON islands (not executed): the plotly figure, and the data behind the chart for
        // programs. `</` is escaped so no value can end the element early.
        let island = |json: &str| json.replace("</", "<\\/");
        let _ = writeln!(
            self.body,
            "<div class=\"chart\" id=\"chart-{n}\" data-title=\"{t}\">\n\
             <p class=\"chart-title\">{t}</p>\n\
             <div class=\"plot\" id=\"chart-{n}-plot\"></div>\n\
             <script type=\"application/json\" class=\"chart-figure\" data-plot=\"chart-{n}-plot\" data-title=\"{t}\"{g}>{}</script>\n\
             <script type=\"application/json\" class=\"chart-data\" id=\"chart-{n}-data\">{}</script>\n\
             </div>",
            island(figure),
            island(data),
            t = escape(title),
            n = self.charts,
            g = x_group.map_or(String::new(), |g| format!(" data-group=\"{}\"", escape(g))),
        );
    }

    /// Opens a row of small multiples (charts side by side, [`Chart::small`]), up to
    /// [`Page::end_block`].
    pub fn begin_multiples(&mut self) {
        self.body.push_str("<div class=\"multiples\">\n");
    }

    /// A selector of the blocks named `group` ([`Page::begin_point`]): `label` before it, one
    /// option per `(value, text)`, `selected` chosen. On screen only the chosen block shows;
    /// printed, all of them.
    pub fn point_selector(&mut self, group: &str, label: &str, options: &[(String, String)], selected: &str) {
        let _ = write!(
            self.body,
            "<p class=\"point-select\"><label>{}<select class=\"points\" data-points=\"{}\">",
            escape(label),
            escape(group)
        );
        for (value, text) in options {
            let chosen = if value == selected { " selected" } else { "" };
            let _ = write!(
                self.body,
                "<option value=\"{}\"{chosen}>{}</option>",
                escape(value),
                escape(text)
            );
        }
        self.body.push_str("</select></label></p>\n");
    }

    /// Opens the block of `group`'s selector for `value`, under its heading `title`, up to
    /// [`Page::end_block`].
    pub fn begin_point(&mut self, group: &str, value: &str, title: &str) {
        let _ = writeln!(
            self.body,
            "<div class=\"point\" data-points=\"{}\" data-value=\"{}\">\n<h3>{}</h3>",
            escape(group),
            escape(value),
            escape(title)
        );
    }

    /// Closes a row of small multiples or a selector's block.
    pub fn end_block(&mut self) {
        self.body.push_str("</div>\n");
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

    /// The whole document; with charts, plotly.js is inlined once at the end.
    pub fn finish(self) -> String {
        let scripts = if self.charts > 0 {
            format!(
                "<noscript><p class=\"note\">The charts are drawn by JavaScript (plotly.js, inside this file): \
                 allow scripts to see them; their data is in each chart's JSON.</p></noscript>\n\
                 <script>{}</script>\n<script>{DRAW}</script>\n<script>{PRINT}</script>\n",
                plotly_js()
            )
        } else {
            format!("<script>{PRINT}</script>\n")
        };
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n\
             <meta name=\"generator\" content=\"dbperf {}\">\n<style>{STYLE}</style>\n</head>\n<body>\n{}{scripts}</body>\n</html>\n",
            escape(&self.title),
            env!("CARGO_PKG_VERSION"),
            self.body
        )
    }
}

/// The size a report with charts stays under: plotly.js's basic bundle is 1.03 MB of it.
pub const MAX_REPORT_BYTES: usize = 1_500_000;

/// plotly.js's basic bundle (scatter and bar traces, all the reports draw), obtained and
/// checked by `build.rs`; empty when the build could not obtain it.
const PLOTLY_BASIC: &str = include_str!(concat!(env!("OUT_DIR"), "/plotly-basic.min.js"));

/// The plotly.js a page inlines: the basic bundle, or (when the build could not obtain it, and
/// said so) the whole of plotly.js as the `plotly` crate embeds it; its offline sources hold
/// plotly.js, then MathJax, which the reports do not need: only the first script is kept.
pub fn plotly_js() -> Cow<'static, str> {
    if !PLOTLY_BASIC.is_empty() {
        return Cow::Borrowed(PLOTLY_BASIC);
    }
    let sources = plotly::Plot::offline_js_sources();
    let start = sources.find('>').map_or(0, |i| i + 1);
    let end = sources.find("</script>").unwrap_or(sources.len());
    Cow::Owned(sources[start..end].to_string())
}

/// Words longer than this get break opportunities in table cells ([`cell_html`]).
const LONG_WORD: usize = 24;

/// A table cell's text, escaped, with a break opportunity (`<wbr>`) after each `,` `/` `=`
/// `-` `;` of a word over [`LONG_WORD`] characters (paths, run ids, `optimizer_switch`), so a
/// table can narrow to a printed page's width without cutting words elsewhere.
fn cell_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let long = word.chars().count() > LONG_WORD;
        for c in word.chars() {
            out.push_str(&escape(c.encode_utf8(&mut [0; 4])));
            if long && matches!(c, ',' | '/' | '=' | '-' | ';') {
                out.push_str("<wbr>");
            }
        }
    }
    out
}

/// A table cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text.
    Text(String),
    /// A row's label over a smaller second line (what varies between runs, over the run id).
    Label {
        /// The label.
        text: String,
        /// The second line.
        detail: String,
    },
    /// A figure the row does not have, with why: the cell says `n/a` with a footnote number,
    /// and the table lists each reason once under it.
    NotAvailable(String),
}

/// A table as HTML (cells escaped); a header of empty cells is left out.
pub fn table_html(header: &[String], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| r.iter().cloned().map(Cell::Text).collect())
        .collect();
    cells_table_html(header, &rows)
}

/// A table of [`Cell`]s as HTML: `n/a` cells are numbered by their reason (the same reason,
/// the same number), and the reasons follow the table, each once.
pub fn cells_table_html(header: &[String], rows: &[Vec<Cell>]) -> String {
    let mut out = String::from("<table>\n");
    if header.iter().any(|h| !h.is_empty()) {
        out.push_str("<tr>");
        for h in header {
            let _ = write!(out, "<th>{}</th>", cell_html(h));
        }
        out.push_str("</tr>\n");
    }
    let mut notes = crate::format::Footnotes::default();
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            match cell {
                Cell::Text(t) => {
                    let _ = write!(out, "<td>{}</td>", cell_html(t));
                }
                Cell::Label { text, detail } => {
                    let _ = write!(
                        out,
                        "<td>{}<br><span class=\"detail\">{}</span></td>",
                        cell_html(text),
                        cell_html(detail)
                    );
                }
                Cell::NotAvailable(why) => {
                    let n = notes.number(why);
                    let _ = write!(out, "<td class=\"na\" title=\"{}\">n/a<sup>{n}</sup></td>", escape(why));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    if !notes.reasons().is_empty() {
        out.push_str("<ol class=\"footnotes\">\n");
        for r in notes.reasons() {
            let _ = writeln!(out, "<li>n/a: {}</li>", escape(r));
        }
        out.push_str("</ol>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_the_page_is_whole() {
        let mut p = Page::new("a <b> & \"c\"");
        p.paragraph("x < y", Some("note"));
        p.table(
            &["k".into(), "v".into()],
            &[
                vec!["<script>".into(), "1".into()],
                vec![
                    "optimizer_switch".into(),
                    "index_merge=on,index_merge_union=on a/b".into(),
                ],
            ],
        );
        let html = p.finish();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<h1>a &lt;b&gt; &amp; &quot;c&quot;</h1>"));
        assert!(html.contains("<td>&lt;script&gt;</td>"));
        // A long word may break after its punctuation, so a printed table fits the page.
        assert!(html.contains("<td>index_merge=<wbr>on,<wbr>index_merge_union=<wbr>on a/b</td>"));
        assert_eq!(
            html.matches("<script>").count(),
            1,
            "only the lines that open sections to print"
        );
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "nothing from the network"
        );
        assert!(html.trim_end().ends_with("</html>"));
        assert!(!html.contains("plotly"), "no charts, no plotly.js");
    }

    #[test]
    fn a_reason_is_a_numbered_footnote_listed_once() {
        let why = |w: &str| Cell::NotAvailable(w.into());
        let label = |r: &str| Cell::Label {
            text: "flush=1 · 4 users".into(),
            detail: r.into(),
        };
        let html = cells_table_html(
            &["run".into(), "waits".into(), "pages/s".into()],
            &[
                vec![label("run-a"), why("performance_schema is OFF"), why("not sampled")],
                vec![
                    label("run-b"),
                    why("performance_schema is OFF"),
                    Cell::Text("3.0".into()),
                ],
            ],
        );
        assert_eq!(html.matches("n/a<sup>1</sup>").count(), 2);
        assert_eq!(html.matches("n/a<sup>2</sup>").count(), 1);
        assert!(html.contains(
            "<ol class=\"footnotes\">\n<li>n/a: performance_schema is OFF</li>\n<li>n/a: not sampled</li>\n</ol>"
        ));
        assert!(html.contains("<td>flush=1 · 4 users<br><span class=\"detail\">run-a</span></td>"));
        assert!(!table_html(&["a".into()], &[vec!["1".into()]]).contains("footnotes"));
    }

    #[test]
    fn plotly_js_is_inlined_once_and_fetches_nothing() {
        let mut p = Page::new("charts");
        let mut c = Chart::new("a", "x", "y");
        c.series.push(super::super::chart::Series::new(
            "s",
            super::super::chart::PALETTE[0],
            vec![(0.0, 1.0), (1.0, 2.0)],
        ));
        p.chart(&c).unwrap();
        c.x_group = Some("time".into());
        p.chart(&c).unwrap();
        let html = p.finish();
        assert_eq!(
            html.matches(" data-group=\"time\"").count(),
            1,
            "the charts hovered together"
        );
        assert_eq!(html.matches("* plotly.js").count(), 1, "plotly.js inlined once");
        assert_eq!(html.matches("class=\"chart-figure\"").count(), 2);
        assert_eq!(
            html.matches("<script>").count(),
            3,
            "plotly.js, the lines that draw and print"
        );
        // plotly.js holds map-tile addresses that only map traces use; the page around it
        // refers to nothing outside itself.
        let (start, end) = (
            html.find("<script>").unwrap(),
            html.find("</script>\n<script>").unwrap(),
        );
        assert!(html.contains("@media print{"), "a print stylesheet");
        assert!(end - start > 1_000_000, "the whole of plotly.js's basic bundle");
        let page = format!("{}{}", &html[..start], &html[end..]);
        for fetch in ["http://", "https://", "@import", "<link"] {
            assert!(!page.contains(fetch), "{fetch}");
        }
    }

    #[test]
    fn a_report_with_every_kind_of_chart_stays_small() {
        use super::super::bars::{Bar, BarSeries};
        use super::super::chart::{Band, Limit, Scale, Series, PALETTE, STALL, WARMUP};
        let mut p = Page::new("sizes");
        let mut time = Chart::new("Throughput", "time since start (s)", "transactions/s");
        time.series.push(Series::new(
            "TPS",
            PALETTE[0],
            (0..3600).map(|i| (i as f64, 1000.0 + (i % 7) as f64)).collect(),
        ));
        time.series
            .push(Series::new("dirty", PALETTE[1], vec![(0.0, 10.0), (3600.0, 80.0)]).below());
        time.y2_label = Some("dirty pages (%)".into());
        time.limits.push(Limit {
            y: 90.0,
            label: "limit".into(),
            color: STALL,
            secondary: true,
        });
        time.bands.push(Band {
            from: 0.0,
            to: 60.0,
            color: WARMUP,
            label: "warmup".into(),
        });
        p.chart(&time).unwrap();
        let mut sweep = Chart::new("TPS by users", "users", "TPS");
        (sweep.x_scale, sweep.y_scale) = (Scale::Log2, Scale::Log);
        sweep
            .series
            .push(Series::new("a", PALETTE[0], vec![(1.0, 600.0), (16.0, 1300.0)]).with_markers());
        p.chart(&sweep).unwrap();
        let bar = |v: f64| {
            Some(Bar {
                value: v,
                low: v * 0.9,
                high: v * 1.1,
                timed_out: None,
            })
        };
        p.bar_chart(&BarChart {
            title: "queries".into(),
            y_label: "relative time".into(),
            categories: (1..=22).map(|q| format!("Q{q}")).collect(),
            series: vec![BarSeries {
                name: "a".into(),
                bars: (0..22).map(|q| bar(1.0 + q as f64 / 50.0)).collect(),
            }],
            reference: Some((1.0, "baseline".into())),
            band: Some((0.95, 1.05)),
            zoom: None,
        })
        .unwrap();
        let html = p.finish();
        assert!(
            html.len() < MAX_REPORT_BYTES,
            "{} bytes: was plotly.js's basic bundle obtained (see the build's warning, DBPERF_PLOTLY_BASIC)?",
            html.len()
        );
    }
}
