//! The "Warnings" section of the HTML reports: each artifact of the measurement
//! ([`crate::warnings`]) as its message (what was found, what to do) and its evidence
//! as a small table of name and value.

use serde_json::Value;

use super::page::Page;
use crate::warnings::Warning;

/// Appends the "Warnings" section for `warnings`; nothing when there are none.
pub fn warnings_section(page: &mut Page, warnings: &[Warning]) {
    if warnings.is_empty() {
        return;
    }
    page.heading("Warnings");
    for w in warnings {
        page.paragraph(&format!("{}: {}", w.kind.id(), w.message), Some("stall"));
        let rows: Vec<Vec<String>> = w
            .evidence
            .iter()
            .map(|(name, value)| vec![name.clone(), evidence_text(name, value)])
            .collect();
        page.table(&["evidence".to_string(), "value".to_string()], &rows);
    }
}

/// Evidence whose lists are a (low, high) pair of a scaling step, read with an arrow.
const PAIRS: &[&str] = &["users", "tps", "client_us_per_query", "client_us_per_txn"];

/// A value of the evidence `key` as text: strings bare, `-` for a missing figure, a pair of a
/// scaling step as `low -> high`, other lists joined with commas, each run's figures (`each`)
/// as `run: name value, ...` separated by semicolons, the rest as compact JSON.
fn evidence_text(key: &str, v: &Value) -> String {
    match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let sep = if PAIRS.contains(&key) { " -> " } else { ", " };
            items.iter().map(|i| evidence_text("", i)).collect::<Vec<_>>().join(sep)
        }
        Value::Array(items) if items.iter().all(Value::is_object) => items
            .iter()
            .filter_map(Value::as_object)
            .map(|o| {
                let run = o.get("run").and_then(Value::as_str).unwrap_or("?");
                let figures: Vec<String> = o
                    .iter()
                    .filter(|(k, _)| k.as_str() != "run")
                    .map(|(k, v)| format!("{k} {}", evidence_text(k, v)))
                    .collect();
                format!("{run}: {}", figures.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warnings::WarningKind;

    #[test]
    fn each_warning_is_its_message_and_an_evidence_table() {
        let w = Warning::new(
            WarningKind::SuperlinearScaling,
            "1 -> 2 users gave <297> -> 1,469 TPS".into(),
            [("users", Value::from(vec![1, 2])), ("host_idle_pct_low", Value::Null)],
        );
        let mut page = Page::new("t");
        warnings_section(&mut page, &[w]);
        let html = page.finish();
        assert!(html.contains("<h2>Warnings</h2>"), "{html}");
        assert!(
            html.contains("superlinear_scaling: 1 -&gt; 2 users gave &lt;297&gt;"),
            "{html}"
        );
        assert!(html.contains("<td>users</td><td>1 -&gt; 2</td>"), "{html}");
        assert!(html.contains("<td>host_idle_pct_low</td><td>-</td>"), "{html}");
        assert_eq!(evidence_text("runs", &serde_json::json!(["a", "b", "c"])), "a, b, c");
        assert_eq!(
            evidence_text(
                "each",
                &serde_json::json!([{"run": "a", "intervals": 3}, {"run": "b", "intervals": 4}])
            ),
            "a: intervals 3; b: intervals 4"
        );
        let mut empty = Page::new("t");
        warnings_section(&mut empty, &[]);
        assert!(!empty.finish().contains("Warnings"));
    }
}
