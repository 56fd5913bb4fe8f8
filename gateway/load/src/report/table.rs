//! The report as the table `mcpgw load` prints: the run's parameters, the headline numbers, one line per
//! operation (and per scenario step), the asks, the generator's CPU and memory, and the warnings.

use std::fmt::Write as _;

use super::Report;
use crate::stats::{Op, Outcomes};

impl Report {
    /// The summary table.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let mode = match self.rate_rps {
            Some(r) => format!("open loop at {r}/s"),
            None => "closed loop".to_owned(),
        };
        let _ = writeln!(
            t,
            "mcpgw load: {}{}",
            self.url,
            if self.self_test {
                "  (self-test: in-process mock backend)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            t,
            "  {} sessions, era {}, {mode}, mix {}, {} threads",
            self.sessions,
            self.era.as_str(),
            self.mix,
            self.cpu.threads
        );
        if let Some(m) = &self.merged {
            let _ = writeln!(
                t,
                "  merged from {} reports: {}",
                m.reports.len(),
                m.reports.join(", ")
            );
            if !m.windows_overlap {
                let _ = writeln!(
                    t,
                    "warning     their windows do not all overlap: the generators did not load the target at the same time, and the throughput is over the union of their windows"
                );
            }
        }
        if self.window.late_ms > 0 {
            let _ = writeln!(
                t,
                "warning     the load started {} ms after --start-at (the set-up took longer)",
                self.window.late_ms
            );
        }
        if let Some(tool) = &self.tool {
            let _ = writeln!(t, "  tool {tool}");
        }
        if let Some(uri) = &self.uri {
            let _ = writeln!(t, "  resource {uri}");
        }
        if let Some(tool) = &self.ask_tool {
            let _ = writeln!(t, "  ask tool {tool}");
        }
        let pct = |n: u64| 100.0 * n as f64 / self.requests.max(1) as f64;
        let _ = writeln!(
            t,
            "requests    {} in {:.2} s ({:.1}/s); errors {} ({:.2}%); set-up {:.2} s; stopped by {}",
            self.requests,
            self.duration_s,
            self.throughput_rps,
            self.errors,
            pct(self.errors),
            self.setup_s,
            self.stopped
        );
        let l = &self.latency_ms;
        let _ = writeln!(
            t,
            "latency ms  p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  (min {:.3}, mean {:.3})",
            l.p50, l.p90, l.p99, l.p999, l.max, l.min, l.mean
        );
        let _ = writeln!(t, "outcomes    {}", outcome_line(&self.outcomes));
        let _ = writeln!(
            t,
            "{:<26}{:>10}{:>9}{:>10}{:>10}{:>10}",
            "operation", "requests", "errors", "p50 ms", "p99 ms", "max ms"
        );
        // In the order of `Op::ALL`: the load's requests first, then set-up and tear-down.
        let ordered = Op::ALL
            .into_iter()
            .filter_map(|op| self.operations.get(op.name()).map(|r| (op.name(), r)));
        for (name, op) in ordered {
            let label = match name {
                _ if op.measured => name.to_owned(),
                "delete" => format!("{name} (tear-down)"),
                _ => format!("{name} (set-up)"),
            };
            let _ = writeln!(
                t,
                "  {label:<24}{:>10}{:>9}{:>10.3}{:>10.3}{:>10.3}",
                op.requests, op.errors, op.latency_ms.p50, op.latency_ms.p99, op.latency_ms.max
            );
        }
        for (group, steps) in &self.steps {
            for (name, op) in steps {
                let label = format!("{group}: {name}");
                let _ = writeln!(
                    t,
                    "  {label:<24}{:>10}{:>9}{:>10.3}{:>10.3}{:>10.3}",
                    op.requests, op.errors, op.latency_ms.p50, op.latency_ms.p99, op.latency_ms.max
                );
            }
        }
        if let Some(a) = self.operations.get(Op::Ask.name()).and_then(|op| op.asks) {
            let (l, m) = (a.by_era.legacy, a.by_era.modern);
            let _ = writeln!(
                t,
                "asks        questions answered {} (legacy {} in {} asks, modern {} in {} asks and {} input_required rounds); declined {}; answers refused {}",
                a.questions_answered,
                l.questions_answered,
                l.requests,
                m.questions_answered,
                m.requests,
                m.input_required_rounds,
                a.questions_declined,
                a.answers_refused
            );
        }
        if let Some(g) = self.cpu.generator_cores {
            let _ = write!(
                t,
                "generator   {g:.2} of {} cores",
                self.cpu.available_cores
            );
            if let (true, Some(o)) = (self.self_test, self.cpu.other_cores) {
                let _ = write!(t, "; in-process mock {o:.2} cores");
            }
            if let Some(m) = self.memory {
                let _ = write!(
                    t,
                    "; resident {:.1} MiB with the sessions set up ({:.2} KiB per session), peak {:.1} MiB",
                    m.after_setup_mib, m.per_session_kib, m.peak_mib
                );
            }
            let _ = writeln!(t);
            if g >= 0.85 * self.cpu.threads.min(self.cpu.available_cores) as f64 {
                let _ = writeln!(
                    t,
                    "warning     the generator was CPU-bound: these numbers may be its limit, not the target's (compare with --self-test)"
                );
            }
        }
        if self.self_test {
            let _ = writeln!(
                t,
                "self-test   the generator's ceiling on this machine: a target measured near this rate is limited by the generator, not by itself"
            );
        }
        if self.resent > 0 {
            let _ = writeln!(
                t,
                "resent      {} requests, once each: their keep-alive connection closed before any answer",
                self.resent
            );
        }
        if self.abandoned > 0 {
            let _ = writeln!(
                t,
                "abandoned   {} requests in flight at the hard deadline (not counted)",
                self.abandoned
            );
        }
        if let Some(w) = &self.watch {
            t.push_str(&w.table());
        }
        t
    }
}

/// `ok N, isError N, …` then the non-zero statuses and codes.
fn outcome_line(o: &Outcomes) -> String {
    let mut parts = vec![format!("ok {}", o.ok)];
    for (name, n) in [
        ("isError", o.tool_error),
        ("jsonrpc-error", o.jsonrpc_error),
        ("http-error", o.http_error),
        ("incomplete", o.incomplete),
        ("invalid", o.invalid_response),
        ("timeout", o.timeout),
        ("transport", o.transport_error),
        ("overflow", o.overflow),
    ] {
        if n > 0 {
            parts.push(format!("{name} {n}"));
        }
    }
    let statuses: Vec<String> = o
        .by_http_status
        .iter()
        .map(|(s, n)| format!("{s}: {n}"))
        .collect();
    let mut line = parts.join(", ");
    if !statuses.is_empty() {
        let _ = write!(line, "; HTTP {}", statuses.join(", "));
    }
    if !o.by_jsonrpc_code.is_empty() {
        let codes: Vec<String> = o
            .by_jsonrpc_code
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        let _ = write!(line, "; JSON-RPC {}", codes.join(", "));
    }
    if !o.invalid_reasons.is_empty() {
        let why: Vec<String> = o
            .invalid_reasons
            .iter()
            .map(|(r, n)| format!("{r}: {n}"))
            .collect();
        let _ = write!(line, "; invalid {}", why.join(", "));
    }
    if !o.transport_reasons.is_empty() {
        let why: Vec<String> = o
            .transport_reasons
            .iter()
            .map(|(r, n)| format!("{r}: {n}"))
            .collect();
        let _ = write!(line, "; transport {}", why.join(", "));
    }
    line
}
