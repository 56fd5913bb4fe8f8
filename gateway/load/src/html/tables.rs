//! The page's tables: the operations (and scenario steps), the outcomes, the run's parameters.

use super::{head, mode, row};
use crate::report::Report;

pub(super) fn operations(p: &mut String, r: &Report) {
    p.push_str("<h2>Operations</h2><table id=\"operations\">");
    head(
        p,
        &[
            "operation",
            "requests",
            "errors",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "mean ms",
        ],
    );
    p.push_str("<tbody>");
    for (name, op) in &r.operations {
        let l = &op.latency_ms;
        let label = if op.measured {
            name.to_string()
        } else {
            format!("{name} (set-up/tear-down)")
        };
        row(
            p,
            name,
            &[
                ("name", label),
                ("requests", op.requests.to_string()),
                ("errors", op.errors.to_string()),
                ("p50", l.p50.to_string()),
                ("p90", l.p90.to_string()),
                ("p99", l.p99.to_string()),
                ("p999", l.p999.to_string()),
                ("max", l.max.to_string()),
                ("mean", format!("{:.3}", l.mean)),
            ],
        );
    }
    p.push_str("</tbody></table>");
}

pub(super) fn outcomes(p: &mut String, r: &Report) {
    let o = &r.outcomes;
    p.push_str("<h2>Outcomes</h2><table id=\"outcomes\">");
    head(p, &["outcome", "requests"]);
    p.push_str("<tbody>");
    let classes = [
        ("ok", o.ok),
        ("tool_error", o.tool_error),
        ("jsonrpc_error", o.jsonrpc_error),
        ("http_error", o.http_error),
        ("incomplete", o.incomplete),
        ("invalid_response", o.invalid_response),
        ("timeout", o.timeout),
        ("transport_error", o.transport_error),
        ("overflow", o.overflow),
    ];
    for (name, n) in classes {
        row(
            p,
            name,
            &[("name", name.to_owned()), ("count", n.to_string())],
        );
    }
    for (status, n) in &o.by_http_status {
        let key = format!("http {status}");
        row(p, &key, &[("name", key.clone()), ("count", n.to_string())]);
    }
    for (code, n) in &o.by_jsonrpc_code {
        let key = format!("jsonrpc {code}");
        row(p, &key, &[("name", key.clone()), ("count", n.to_string())]);
    }
    for (why, n) in o.invalid_reasons.iter().chain(&o.transport_reasons) {
        row(p, why, &[("name", why.clone()), ("count", n.to_string())]);
    }
    p.push_str("</tbody></table>");
}

pub(super) fn parameters(p: &mut String, r: &Report) {
    p.push_str("<h2>Parameters</h2><table id=\"parameters\"><tbody>");
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
    let mut rows: Vec<(&str, String)> = vec![
        ("url", r.url.clone()),
        ("self_test", r.self_test.to_string()),
        ("era", r.era.as_str().to_owned()),
        ("mode", mode(r)),
        ("sessions", r.sessions.to_string()),
        ("mix", r.mix.clone()),
        ("tool", opt(&r.tool)),
        ("uri", opt(&r.uri)),
        ("ask_tool", opt(&r.ask_tool)),
        ("threads", r.cpu.threads.to_string()),
        ("available_cores", r.cpu.available_cores.to_string()),
        (
            "generator_cores",
            r.cpu
                .generator_cores
                .map_or("-".into(), |c| format!("{c:.2}")),
        ),
        ("setup_s", r.setup_s.to_string()),
        ("duration_s", r.duration_s.to_string()),
        ("stopped", r.stopped.to_string()),
        ("abandoned", r.abandoned.to_string()),
        ("resent", r.resent.to_string()),
    ];
    if let Some(m) = &r.merged {
        rows.push((
            "merged_from",
            format!(
                "{} reports: {}{}",
                m.reports.len(),
                m.reports.join(", "),
                if m.windows_overlap {
                    ""
                } else {
                    " (their windows do not all overlap)"
                }
            ),
        ));
    }
    if let Some(tl) = &r.timeline {
        rows.push((
            "timeline",
            format!(
                "{} points of {} s (thinned {} times)",
                tl.points.len(),
                tl.interval_s,
                tl.thinned
            ),
        ));
        if let Some(s) = &tl.stream {
            rows.push(("stream", s.clone()));
        }
    }
    for (k, v) in rows {
        row(p, k, &[("name", k.to_owned()), ("value", v)]);
    }
    p.push_str("</tbody></table>");
}
