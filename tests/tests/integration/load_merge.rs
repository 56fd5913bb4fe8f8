//! Many generators, one result: the docs' two-generator example (docs/src/load-testing.md, `<!-- test:
//! load-merge`) run as pasted, its ports, binary and duration substituted, and its merged report checked against the two it
//! merges — counts summed, percentiles those of the two decoded histograms added with HDR's own `add`,
//! exactly; and the Kubernetes Job's generator command (`deploy/kubernetes/load/job.yaml`) run as two
//! "pods" on this machine, each one's output (standard output and error together, as `kubectl logs` gives
//! them) merged as `run.sh` merges them. Every run is bounded.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use serde_json::Value;

use crate::deploy::manifest;
use crate::load_example::{run_bash, set_flag, substitute};
use crate::support::*;

const LIMIT: Duration = Duration::from_secs(120);

/// The histogram of a report's `hdr` field (base64 of HDR's V2 serialization).
fn histogram(hdr: &Value) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(hdr.as_str().expect("an hdr string"))
        .unwrap();
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .unwrap()
}

/// Milliseconds, as the report writes them (microseconds recorded, divided by 1000).
fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// `merged` is `parts` merged: every count summed; the headline and each operation's percentiles those of
/// the parts' histograms added with hdrhistogram's own `add`; the windows overlap.
fn assert_merged_exactly(merged: &Value, parts: &[Value]) {
    let sum = |f: &dyn Fn(&Value) -> &Value| -> u64 {
        parts.iter().map(|p| f(p).as_u64().unwrap()).sum()
    };
    for key in ["requests", "errors", "sessions"] {
        assert_eq!(merged[key].as_u64().unwrap(), sum(&|p| &p[key]), "{key}");
    }
    for key in ["ok", "tool_error", "transport_error", "timeout"] {
        assert_eq!(
            merged["outcomes"][key].as_u64().unwrap(),
            sum(&|p| &p["outcomes"][key]),
            "outcomes.{key}"
        );
    }
    assert!(merged["requests"].as_u64().unwrap() > 0);
    let check = |what: &str, merged_latency: &Value, hdrs: Vec<&Value>, merged_hdr: &Value| {
        let mut added = histogram(hdrs[0]);
        for h in &hdrs[1..] {
            added.add(histogram(h)).unwrap();
        }
        assert_eq!(histogram(merged_hdr), added, "{what}: the merged histogram");
        for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
            assert_eq!(
                merged_latency[key].as_f64().unwrap(),
                ms(added.value_at_quantile(q)),
                "{what}: {key}"
            );
        }
        assert_eq!(merged_latency["max"].as_f64().unwrap(), ms(added.max()));
        assert_eq!(merged_latency["min"].as_f64().unwrap(), ms(added.min()));
    };
    check(
        "headline",
        &merged["latency_ms"],
        parts.iter().map(|p| &p["hdr"]).collect(),
        &merged["hdr"],
    );
    let call = &merged["operations"]["tools/call"];
    assert_eq!(
        call["requests"].as_u64().unwrap(),
        sum(&|p| &p["operations"]["tools/call"]["requests"])
    );
    check(
        "tools/call",
        &call["latency_ms"],
        parts
            .iter()
            .map(|p| &p["operations"]["tools/call"]["hdr"])
            .collect(),
        &call["hdr"],
    );
    assert_eq!(merged["merged"]["windows_overlap"], true, "{merged}");
    // Throughput over the union of the windows.
    let union = (merged["window"]["end_unix_ms"].as_u64().unwrap()
        - merged["window"]["start_unix_ms"].as_u64().unwrap()) as f64
        / 1000.0;
    let answered =
        merged["requests"].as_u64().unwrap() - merged["outcomes"]["overflow"].as_u64().unwrap();
    let rps = merged["throughput_rps"].as_f64().unwrap();
    assert!(
        (rps - answered as f64 / union).abs() <= 0.05,
        "{rps} vs {answered} / {union}"
    );
}

#[test]
fn the_docs_two_generator_run_merges_exactly() {
    let mock = free_port();
    let mut script = doc_block("load-merge", "sh");
    assert!(
        script.contains("\nmcpgw "),
        "the example runs mcpgw from the PATH"
    );
    script = substitute(&script, "127.0.0.1:7900", &format!("127.0.0.1:{mock}"));
    script = set_flag(&script, "--duration", "2s");
    script = set_flag(&script, "--sessions", "4");
    let dir = TempDir::new("load-merge");
    let (status, out, err) = run_bash(&script, &dir.0, LIMIT);
    let context = format!("script:\n{script}\nstdout:\n{out}\nstderr:\n{err}");
    let status =
        status.unwrap_or_else(|| panic!("the example did not end within {LIMIT:?}\n{context}"));
    assert!(status.success(), "{status}\n{context}");
    // --quiet: the generators printed nothing; the merge printed its table once.
    assert_eq!(out.matches("mcpgw load: ").count(), 1, "{context}");
    assert!(
        out.contains("merged from 2 reports: gen-a.json, gen-b.json"),
        "{context}"
    );
    assert!(!out.contains("warning"), "{context}");
    let parts = [
        read_json(&dir.0.join("gen-a.json")),
        read_json(&dir.0.join("gen-b.json")),
    ];
    let merged = read_json(&dir.0.join("merged.json"));
    assert_merged_exactly(&merged, &parts);
    let page =
        std::fs::read_to_string(dir.0.join("merged.html")).expect("merge --html wrote the page");
    assert!(page.contains("id=\"chart-distribution\""), "{page}");
    assert!(page.contains("2 reports: gen-a.json, gen-b.json"), "{page}");
    // Both generators started at the example's one instant.
    assert_eq!(
        parts[0]["window"]["start_unix_ms"].as_u64().unwrap() / 1000,
        parts[1]["window"]["start_unix_ms"].as_u64().unwrap() / 1000,
        "{context}"
    );
}

#[test]
fn the_kubernetes_jobs_generators_print_reports_that_merge() {
    let job = manifest("kubernetes/load/job.yaml", "Job");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], job["spec"]["parallelism"]);
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let env: Vec<(String, String)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    // Every $(VAR) of the arguments is one of the container's variables (Kubernetes expands only those).
    for a in args.iter().filter(|a| a.starts_with("$(")) {
        let name = &a[2..a.len() - 1];
        assert!(
            env.iter().any(|(n, _)| n == name),
            "{a} is not in env: {env:?}"
        );
    }
    assert!(env.contains(&("START_AT".to_owned(), "@START_AT@".to_owned())));
    let run = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes/load/run.sh"),
    )
    .unwrap();
    assert!(
        run.contains("s/@START_AT@/"),
        "run.sh replaces the placeholder"
    );
    assert!(run.contains("load merge"), "run.sh merges");

    // Two pods on this machine: the Job's arguments, the Service replaced by a mock, a short window.
    let mock = http_mock(&["--latency-ms", "1"]);
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 3000;
    // The clients' key, mounted from its Secret in the pod: a file here.
    let key_dir = TempDir::new("load-job-key");
    let key_file = key_dir.0.join("client-key");
    std::fs::write(&key_file, "a-client-key-0123456789abcdef\n").unwrap();
    let secret = "/run/secrets/mcpgw-load/client-key";
    let bearer = args.iter().position(|a| a == "--bearer-file");
    assert_eq!(
        bearer.map(|i| args[i + 1].as_str()),
        Some(secret),
        "the Job sends the clients' key"
    );
    let volume = &job["spec"]["template"]["spec"]["volumes"][0];
    assert_eq!(volume["secret"]["secretName"], "mcpgw-load");
    let mount = &container["volumeMounts"][0];
    assert_eq!(mount["name"], volume["name"]);
    assert_eq!(mount["mountPath"], "/run/secrets/mcpgw-load");
    let words = |a: &String| -> String {
        match a.as_str() {
            "$(TARGET_URL)" => mock.url.clone(),
            s if s == secret => key_file.display().to_string(),
            "$(START_AT)" => start.to_string(),
            _ => a.clone(),
        }
    };
    let mut pod_args: Vec<String> = args.iter().map(words).collect();
    for (flag, value) in [("--duration", "2s"), ("--sessions", "4")] {
        let i = pod_args
            .iter()
            .position(|a| a == flag)
            .unwrap_or_else(|| panic!("the Job has no {flag}"));
        pod_args[i + 1] = value.to_owned();
    }
    let dir = TempDir::new("load-job");
    let pods: Vec<_> = (0..2)
        .map(|i| {
            // Standard output and error into one file, as `kubectl logs` gives them.
            let log = std::fs::File::create(dir.0.join(format!("gen-{i}.json"))).unwrap();
            Command::new(mcpgw())
                .args(&pod_args)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .process_group(0)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut pod in pods {
        let deadline = std::time::Instant::now() + LIMIT;
        let status = loop {
            if let Some(s) = pod.try_wait().unwrap() {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "a generator pod did not end"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{status}");
    }
    let parts: Vec<Value> = (0..2)
        .map(|i| read_json(&dir.0.join(format!("gen-{i}.json"))))
        .collect();
    let out = Command::new(mcpgw())
        .args(["load", "merge"])
        .args((0..2).map(|i| dir.0.join(format!("gen-{i}.json"))))
        .arg("--json")
        .arg(dir.0.join("merged.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = read_json(&dir.0.join("merged.json"));
    assert_merged_exactly(&merged, &parts);
    assert_eq!(merged["era"], "mixed");
}
