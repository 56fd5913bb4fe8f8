//! `mcpgw load`'s soak and report features as a user meets them (issue 18 §3, §4): a short open-loop run
//! against `mcpgw mock-backend` with `--watch-pid` of the mock, `--stream`, `--json` and `--html`. The JSON
//! report's timeline accounts for every request and the watched mock's samples; the stream file has its
//! head, a line a second and its end; the page parses as strict XML and as HTML (Python's parsers), what
//! it shows equals the JSON report, and it renders in Debian's headless chromium with JavaScript off and no
//! request beyond itself (`tests/fixtures/admin/render_file.mjs`, playwright-core; the screenshot is saved
//! as `<target>/test-artifacts/load-report.png`). A run killed with SIGKILL keeps its seconds in the
//! stream; `--fail-on-leak` fails a run whose check could not be made.
//!
//! The browser part needs `tests/fixtures/admin/setup.sh` and `chromium` (`.ci/run` installs both); it is
//! skipped with `MCPGW_SKIP_INTEROP=1`, like the admin page's. Every process is bounded and killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::interop::peers::run_bounded;
use crate::support::*;

/// What the shared run left: its reports as text, and the mock's pid.
struct Run {
    json: Value,
    stream: String,
    pid: u32,
    dir: PathBuf,
}

/// The run, once for the tests of this module: 4 s of open-loop load on the mock, watched.
fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let mock = http_mock(&[]);
        // Kept until the test binary ends (the page is rendered from it); in the target directory.
        let dir = artifacts().join(format!("load-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut load = Command::new(mcpgw());
        load.args([
            "load",
            "--url",
            &mock.url,
            "--era",
            "mixed",
            "--sessions",
            "4",
        ])
        .args(["--mix", "tools/list=1,tools/call=4", "--rate", "80/s"])
        .args(["--duration", "4s", "--no-progress"])
        .args(["--watch-pid", &mock.pid().to_string(), "--warm-up", "1s"])
        .arg("--json")
        .arg(dir.join("report.json"))
        .arg("--html")
        .arg(dir.join("report.html"))
        .arg("--stream")
        .arg(dir.join("report.jsonl"));
        let (ok, out, err) = run_bounded(load, Duration::from_secs(90));
        assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
        assert!(out.contains("leak check  "), "{out}");
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        Run {
            json: serde_json::from_str(&read("report.json")).unwrap(),
            stream: read("report.jsonl"),
            pid: mock.pid(),
            dir,
        }
    })
}

/// Where test artifacts go: `<target>/test-artifacts/`.
fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("the artifacts directory");
    dir
}

#[test]
fn a_watched_run_has_a_timeline_a_stream_and_a_leak_check() {
    let r = run();
    let points = r.json["timeline"]["points"].as_array().unwrap();
    assert!(points.len() >= 4, "{}", r.json["timeline"]);
    let sum: u64 = points.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
    assert_eq!(
        Some(sum),
        r.json["requests"].as_u64(),
        "every request in one second"
    );
    assert!(points.iter().any(|p| p["p99_ms"].as_f64().unwrap() > 0.0));
    // The mock, read every second.
    let watched = &r.json["watch"]["processes"][0];
    assert_eq!(watched["pid"].as_u64(), Some(u64::from(r.pid)), "{watched}");
    assert_eq!(watched["name"], "mcpgw", "{watched}");
    assert!(watched["samples"].as_u64().unwrap() >= 4, "{watched}");
    assert!(
        watched["rss_max_bytes"].as_u64().unwrap() > 1 << 20,
        "{watched}"
    );
    assert!(watched["fds_max"].as_u64().unwrap() >= 3, "{watched}");
    assert!(
        ["ok", "leak", "inconclusive"].contains(&watched["verdict"].as_str().unwrap()),
        "{watched}"
    );
    let samples: Vec<&Value> = points
        .iter()
        .filter_map(|p| p["processes"].as_array()?.first())
        .collect();
    assert_eq!(samples.len(), points.len(), "a sample in every point");
    assert!(samples.iter().all(|s| s["rss_bytes"].as_u64().unwrap() > 0));
    // The stream: the run's head, a line a second (the same seconds as the timeline), the end.
    let lines: Vec<Value> = r
        .stream
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0]["run"]["watch_pids"][0].as_u64(),
        Some(u64::from(r.pid))
    );
    assert!(lines.last().unwrap()["end"]["leak_verdict"].is_string());
    let seconds = &lines[1..lines.len() - 1];
    assert_eq!(seconds.len(), points.len(), "{}", r.stream);
    for (s, p) in seconds.iter().zip(points) {
        assert_eq!((&s["t"], &s["requests"]), (&p["t"], &p["requests"]));
    }
}

/// The page through Python's parsers: strict XML (every element closed) and HTML; what it shows, as JSON.
fn parsed_page(html: &Path) -> Value {
    const SCRIPT: &str = r#"
import json, sys, xml.etree.ElementTree as ET
from html.parser import HTMLParser
text = open(sys.argv[1], encoding="utf-8").read()
root = ET.fromstring(text[text.index("<html"):])
SVG = "{http://www.w3.org/2000/svg}"
class Check(HTMLParser):
    def __init__(self):
        super().__init__()
        self.open = []
    def handle_starttag(self, tag, attrs):
        if tag != "meta":
            self.open.append(tag)
    def handle_startendtag(self, tag, attrs):
        pass
    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, tag
c = Check(); c.feed(text); c.close()
assert not c.open, c.open
out = {"series": {}, "tables": {}}
for svg in root.iter(SVG + "svg"):
    for line in svg.iter(SVG + "polyline"):
        ys = [float(v) for v in line.get("data-y").split()]
        xs = [float(v) for v in line.get("data-x").split()]
        out["series"][svg.get("id") + "/" + line.get("data-series")] = {"x": xs, "y": ys}
for table in root.iter("table"):
    rows = {}
    for tr in table.iter("tr"):
        if tr.get("data-key") is not None:
            rows[tr.get("data-key")] = {td.get("data-key"): td.text for td in tr.iter("td")}
    out["tables"][table.get("id")] = rows
print(json.dumps(out))
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(html)
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the page does not parse: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_html_report_shows_the_json_reports_numbers() {
    let r = run();
    let page = parsed_page(&r.dir.join("report.html"));
    let j = &r.json;
    let points = j["timeline"]["points"].as_array().unwrap();
    let of = |key: &str| -> Vec<f64> { points.iter().map(|p| p[key].as_f64().unwrap()).collect() };
    let series = |name: &str| -> (Vec<f64>, Vec<f64>) {
        let s = &page["series"][name];
        let v = |k: &str| -> Vec<f64> {
            s[k].as_array()
                .unwrap_or_else(|| panic!("{name} on the page"))
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        };
        (v("x"), v("y"))
    };
    assert_eq!(
        series("chart-throughput/throughput"),
        (of("t"), of("throughput_rps"))
    );
    let busy: Vec<&Value> = points.iter().filter(|p| p["requests"] != 0).collect();
    for (chart, key) in [("p50", "p50_ms"), ("p99", "p99_ms"), ("p99.9", "p999_ms")] {
        let y: Vec<f64> = busy.iter().map(|p| p[key].as_f64().unwrap()).collect();
        assert_eq!(series(&format!("chart-latency/{chart}")).1, y, "{chart}");
    }
    let ok_per_s: Vec<f64> = points
        .iter()
        .map(|p| p["outcomes"]["ok"].as_f64().unwrap() / p["span_s"].as_f64().unwrap())
        .collect();
    assert_eq!(series("chart-outcomes/ok").1, ok_per_s);
    let rss: Vec<f64> = points
        .iter()
        .map(|p| p["processes"][0]["rss_bytes"].as_f64().unwrap() / 1048576.0)
        .collect();
    assert_eq!(series(&format!("chart-rss/{} mcpgw", r.pid)).1, rss);
    let l = &j["latency_ms"];
    let curve: Vec<f64> = ["min", "p50", "p90", "p99", "p999", "max"]
        .iter()
        .map(|k| l[k].as_f64().unwrap())
        .collect();
    assert_eq!(series("chart-distribution/all").1, curve);
    // The tables.
    let summary = &page["tables"]["summary"]["all"];
    assert_eq!(summary["requests"], j["requests"].to_string().as_str());
    assert_eq!(
        summary["p99"].as_str().unwrap().parse::<f64>().ok(),
        l["p99"].as_f64()
    );
    for (name, op) in j["operations"].as_object().unwrap() {
        let shown = &page["tables"]["operations"][name];
        assert_eq!(
            shown["requests"],
            op["requests"].to_string().as_str(),
            "{name}"
        );
        for k in ["p50", "p99", "max"] {
            assert_eq!(
                shown[k].as_str().unwrap().parse::<f64>().ok(),
                op["latency_ms"][k].as_f64(),
                "{name} {k}"
            );
        }
    }
    assert_eq!(
        page["tables"]["watched"][r.pid.to_string()]["verdict"],
        j["watch"]["processes"][0]["verdict"]
    );
    assert_eq!(
        page["tables"]["outcomes"]["ok"]["count"],
        j["outcomes"]["ok"].to_string().as_str()
    );
}

#[test]
fn the_html_report_renders_in_headless_chromium_without_fetching_anything() {
    let Some(node) = browser() else {
        return;
    };
    let r = run();
    let screenshot = artifacts().join("load-report.png");
    let _ = std::fs::remove_file(&screenshot);
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/admin/render_file.mjs");
    let mut cmd = Command::new(node);
    cmd.arg(driver)
        .arg(r.dir.join("report.html"))
        .arg(&screenshot);
    let (ok, out, err) = run_bounded(cmd, Duration::from_secs(120));
    let rendered = out
        .lines()
        .find_map(|l| l.strip_prefix("RENDERED "))
        .unwrap_or_else(|| panic!("ok {ok}\nstdout:\n{out}\nstderr:\n{err}"));
    let v: Value = serde_json::from_str(rendered).unwrap();
    assert_eq!(v["problems"], serde_json::json!([]), "{v}");
    assert_eq!(v["requests"], serde_json::json!([]), "nothing fetched: {v}");
    assert!(
        v["title"].as_str().unwrap().starts_with("mcpgw load: "),
        "{v}"
    );
    let charts = v["charts"].as_array().unwrap();
    let ids: Vec<&str> = charts.iter().map(|c| c["id"].as_str().unwrap()).collect();
    for id in [
        "chart-throughput",
        "chart-latency",
        "chart-outcomes",
        "chart-distribution",
        "chart-rss",
        "chart-cpu",
    ] {
        assert!(ids.contains(&id), "{id}: {v}");
    }
    for c in charts {
        assert!(
            c["width"].as_f64().unwrap() > 300.0 && c["height"].as_f64().unwrap() > 100.0,
            "{c}"
        );
    }
    // The lines are drawn: the throughput and the distribution span most of their chart's width.
    for id in ["chart-throughput", "chart-distribution"] {
        let c = charts.iter().find(|c| c["id"] == id).unwrap();
        assert!(c["lines"][0]["width"].as_f64().unwrap() > 300.0, "{c}");
    }
    let png = std::fs::read(&screenshot).expect("the screenshot is saved");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}

/// Node 22 of `tests/fixtures/admin` (playwright-core), or `None` when skipped.
fn browser() -> Option<PathBuf> {
    if std::env::var("MCPGW_SKIP_INTEROP").is_ok_and(|v| v == "1") {
        println!("load_report: the browser test is skipped (MCPGW_SKIP_INTEROP=1)");
        return None;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/admin");
    let node = dir.join(".bin/node");
    assert!(
        node.exists()
            && dir
                .join("node_modules/playwright-core/package.json")
                .exists(),
        "run tests/fixtures/admin/setup.sh first (Node 22 and playwright-core), and apt-get install chromium"
    );
    Some(node)
}

#[test]
fn a_run_killed_mid_way_keeps_its_seconds_in_the_stream() {
    let mock = http_mock(&[]);
    let dir = TempDir::new("load-killed");
    let stream = dir.0.join("run.jsonl");
    let child = Command::new(mcpgw())
        .args([
            "load",
            "--url",
            &mock.url,
            "--sessions",
            "2",
            "--rate",
            "50/s",
        ])
        .args(["--duration", "60s", "--no-progress", "--stream"])
        .arg(&stream)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    // The head and three seconds.
    while std::fs::read_to_string(&stream).map_or(0, |t| t.lines().count()) < 4 {
        assert!(
            Instant::now() < deadline,
            "no three seconds streamed within 60 s"
        );
        assert!(child.0.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    child.0.kill().unwrap(); // SIGKILL: no chance to write anything more
    child.0.wait().unwrap();
    let text = std::fs::read_to_string(&stream).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(lines[0]["run"]["url"] == mock.url.as_str(), "{text}");
    let seconds = &lines[1..];
    assert!(seconds.len() >= 3, "{text}");
    assert!(
        seconds.iter().all(|s| s.get("end").is_none()),
        "killed: no end line"
    );
    for (i, s) in seconds.iter().enumerate() {
        assert_eq!(s["t"].as_f64().unwrap().round(), (i + 1) as f64, "{text}");
        assert!(s["requests"].as_u64().is_some(), "{s}");
    }
    assert!(
        seconds.iter().any(|s| s["requests"].as_u64() > Some(0)),
        "{text}"
    );
}

#[test]
fn fail_on_leak_fails_a_run_whose_check_could_not_be_made() {
    let mock = http_mock(&[]);
    let mut load = Command::new(mcpgw());
    load.args([
        "load",
        "--url",
        &mock.url,
        "--sessions",
        "2",
        "--duration",
        "1s",
    ])
    .args([
        "--no-progress",
        "--watch-pid",
        &mock.pid().to_string(),
        "--fail-on-leak",
    ]);
    let (ok, out, err) = run_bounded(load, Duration::from_secs(60));
    assert!(!ok, "{out}\n{err}");
    assert!(out.contains("leak check  inconclusive"), "{out}");
    assert!(
        err.contains("leak check failed: pid") && err.contains("(inconclusive)"),
        "{err}"
    );
}
