//! Parsing the command line of `mcpgw load`: defaults, every flag, refusals, durations, rates, mixes.

use super::*;
use clap::Parser;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: LoadArgs,
}

/// `LoadArgs` from command-line words (without the program name).
pub(crate) fn parse(words: &[&str]) -> LoadArgs {
    Cli::parse_from(std::iter::once("load").chain(words.iter().copied())).args
}

fn try_parse(words: &[&str]) -> Result<LoadArgs, clap::Error> {
    Cli::try_parse_from(std::iter::once("load").chain(words.iter().copied())).map(|c| c.args)
}

#[test]
fn defaults() {
    let a = parse(&["--url", "http://127.0.0.1:1/mcp"]);
    assert_eq!(a.era, Era::Modern);
    assert_eq!(a.sessions, 16);
    assert_eq!(a.timeout, Duration::from_secs(10));
    assert_eq!(a.legacy_version, Generation::V2025_11_25);
    assert!(!a.allow_remote && !a.self_test);
    let p = Plan::from_args(&a).unwrap();
    assert_eq!(p.limit.duration, Duration::from_secs(10));
    assert_eq!(p.limit.requests, None);
    assert_eq!(p.mode, Mode::Closed);
    assert_eq!(p.mix.cycle(), vec![Op::ToolsCall]);
    assert_eq!(p.args["text"], "mcpgw load");
    assert!(p.ask_tool.is_none() && p.ask_args.is_empty());
    assert!(p.threads >= 1);
}

#[test]
fn every_flag() {
    let a = parse(&[
        "--url",
        "http://localhost:7800/mcp",
        "--era",
        "mixed",
        "--sessions",
        "64",
        "--requests",
        "1000",
        "--rate",
        "2000/s",
        "--max-in-flight",
        "50",
        "--mix",
        "tools/list=1,tools/call=8,resources/read=1,churn=0,ask=2",
        "--tool",
        "m__echo",
        "--args",
        r#"{"text":"hi","n":3}"#,
        "--ask-tool",
        "m__ask",
        "--ask-args",
        r#"{"greeting":"hi"}"#,
        "--uri",
        "mock://m/readme",
        "--json",
        "out.json",
        "--threads",
        "3",
        "--timeout",
        "1500ms",
        "--legacy-version",
        "2025-06-18",
        "--allow-remote",
        "--no-progress",
    ]);
    let p = Plan::from_args(&a).unwrap();
    assert_eq!(p.era, Era::Mixed);
    assert_eq!(p.sessions, 64);
    assert_eq!(p.limit.requests, Some(1000));
    assert_eq!(p.limit.duration, REQUESTS_CAP);
    assert_eq!(
        p.mode,
        Mode::Open {
            rate: 2000.0,
            max_in_flight: 50
        }
    );
    assert!(p.mix.has(Op::ToolsList) && !p.mix.has(Op::Churn) && p.mix.has(Op::Ask));
    assert_eq!(p.ask_tool.as_deref(), Some("m__ask"));
    assert_eq!(p.ask_args["greeting"], "hi");
    assert_eq!(p.tool.as_deref(), Some("m__echo"));
    assert_eq!(p.args["n"], 3);
    assert_eq!(p.uri.as_deref(), Some("mock://m/readme"));
    assert_eq!(a.json.as_deref(), Some(std::path::Path::new("out.json")));
    assert_eq!(p.threads, 3);
    assert_eq!(p.timeout, Duration::from_millis(1500));
    assert_eq!(p.legacy_version, Generation::V2025_06_18);
    assert!(a.allow_remote && !p.progress);
    // Open loop without --max-in-flight: 4 × sessions, at least 256.
    let a = parse(&[
        "--url",
        "http://127.0.0.1:1/",
        "--rate",
        "10",
        "--sessions",
        "100",
    ]);
    assert!(matches!(
        Plan::from_args(&a).unwrap().mode,
        Mode::Open {
            max_in_flight: 400,
            ..
        }
    ));
}

#[test]
fn refusals() {
    for words in [
        &["--era", "legacy"][..],                          // no --url
        &["--url", "u", "--self-test"],                    // both
        &["--url", "u", "--era", "ancient"],               // unknown era
        &["--url", "u", "--duration", "ten"],              // not a duration
        &["--url", "u", "--duration", "10parsecs"],        // unknown unit
        &["--url", "u", "--rate", "0"],                    // zero rate
        &["--url", "u", "--rate", "5/fortnight"],          // unknown period
        &["--url", "u", "--max-in-flight", "5"],           // needs --rate
        &["--url", "u", "--mix", "tools/call=x"],          // weight
        &["--url", "u", "--mix", "prompts/get=1"],         // unknown op
        &["--url", "u", "--mix", "churn=0"],               // nothing to do
        &["--url", "u", "--mix", "churn=1,churn=2"],       // twice
        &["--url", "u", "--args", "[1]"],                  // not an object
        &["--url", "u", "--args", "{"],                    // not JSON
        &["--url", "u", "--ask-args", "\"hi\""],           // not an object
        &["--url", "u", "--mix", "ask=x"],                 // weight
        &["--url", "u", "--legacy-version", "2026-07-28"], // not legacy
    ] {
        assert!(try_parse(words).is_err(), "{words:?} should be refused");
    }
    for words in [
        &["--url", "u", "--sessions", "0"][..],
        &["--url", "u", "--requests", "0"],
        &["--url", "u", "--duration", "0s"],
        &["--url", "u", "--threads", "0"],
        &["--url", "u", "--timeout", "0ms"],
        &["--url", "u", "--rate", "5", "--max-in-flight", "0"],
        &["--url", "u", "--mix", "tools/call=1,ask=1"], // no --ask-tool
    ] {
        let err = Plan::from_args(&parse(words)).unwrap_err();
        assert!(matches!(err, LoadError::InvalidArgs(_)), "{words:?}: {err}");
    }
    assert!(parse(&["--self-test"]).self_test);
}

#[test]
fn durations_and_rates() {
    let d = |s| parse_duration(s).unwrap();
    assert_eq!(d("10s"), Duration::from_secs(10));
    assert_eq!(d("10"), Duration::from_secs(10));
    assert_eq!(d("250ms"), Duration::from_millis(250));
    assert_eq!(d("1.5s"), Duration::from_millis(1500));
    assert_eq!(d("2m"), Duration::from_secs(120));
    assert_eq!(d("1h"), Duration::from_secs(3600));
    assert_eq!(d("500us"), Duration::from_micros(500));
    assert!(parse_duration("").is_err() && parse_duration("-1s").is_err());
    assert!(parse_duration("30d").is_err() && parse_duration("1e9h").is_err());
    assert_eq!(parse_rate("500").unwrap(), 500.0);
    assert_eq!(parse_rate("500/s").unwrap(), 500.0);
    assert_eq!(parse_rate("3000/m").unwrap(), 50.0);
    assert_eq!(parse_rate("0.5/s").unwrap(), 0.5);
    assert!(parse_rate("-1").is_err() && parse_rate("inf").is_err());
}

#[test]
fn mix_cycles_are_exact_and_spread() {
    let m = Mix::parse("tools/list=1,tools/call=8,resources/read=1,churn=0").unwrap();
    let c = m.cycle();
    assert_eq!(c.len(), 10);
    assert_eq!(c.iter().filter(|o| **o == Op::ToolsCall).count(), 8);
    assert_eq!(c.iter().filter(|o| **o == Op::ToolsList).count(), 1);
    assert_eq!(c.iter().filter(|o| **o == Op::ResourcesRead).count(), 1);
    assert!(!c.contains(&Op::Churn) && !m.has(Op::Churn));
    // Spread: the two rare ops are not next to each other.
    let l = c.iter().position(|o| *o == Op::ToolsList).unwrap();
    let r = c.iter().position(|o| *o == Op::ResourcesRead).unwrap();
    assert!(l.abs_diff(r) >= 3, "{c:?}");
    assert_eq!(m.describe(), "tools/list=1,tools/call=8,resources/read=1");
    let even = Mix::parse("tools/list, churn").unwrap().cycle();
    assert_eq!(even, vec![Op::ToolsList, Op::Churn]);
    let asking = Mix::parse("tools/call=1,ask=1").unwrap();
    assert_eq!(asking.cycle(), vec![Op::ToolsCall, Op::Ask]);
    assert_eq!(asking.describe(), "tools/call=1,ask=1");
    // The ask's tool is its own: with --ask-tool, a mix of ask alone needs no --tool.
    let only = parse(&["--url", "u", "--mix", "ask", "--ask-tool", "t"]);
    assert_eq!(Plan::from_args(&only).unwrap().mix.cycle(), vec![Op::Ask]);
}

#[test]
fn start_at_start_in_and_hdr() {
    let a = parse(&[
        "--url",
        "http://127.0.0.1:1/mcp",
        "--start-at",
        "1700000000123",
        "--hdr",
    ]);
    let p = Plan::from_args(&a).unwrap();
    assert_eq!(
        p.start_at,
        Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_123))
    );
    assert!(p.hdr);
    let before = SystemTime::now();
    let p = Plan::from_args(&parse(&[
        "--url",
        "http://127.0.0.1:1/mcp",
        "--start-in",
        "10s",
    ]))
    .unwrap();
    let wait = p.start_at.unwrap().duration_since(before).unwrap();
    assert!(
        wait >= Duration::from_secs(10) && wait < Duration::from_secs(70),
        "{wait:?}"
    );
    assert!(!p.hdr);
    assert!(
        Plan::from_args(&parse(&["--url", "http://127.0.0.1:1/mcp"]))
            .unwrap()
            .start_at
            .is_none()
    );
}

#[test]
fn start_times_out_of_reach_are_refused() {
    let far = (SystemTime::now() + Duration::from_secs(2 * 3600))
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    for words in [vec!["--start-at", far.as_str()], vec!["--start-in", "61m"]] {
        let mut all = vec!["--url", "http://127.0.0.1:1/mcp"];
        all.extend(words);
        let err = Plan::from_args(&parse(&all)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid arguments: --start-at/--start-in must be at most an hour away",
            "{all:?}"
        );
    }
    assert!(try_parse(&["--url", "u", "--start-at", "1", "--start-in", "1s"]).is_err());
    assert!(try_parse(&["--url", "u", "--start-at", "soon"]).is_err());
}

#[test]
fn merge_takes_report_files_and_no_run_flags() {
    let a = parse(&["merge", "a.json", "b.json", "--json", "m.json"]);
    let Some(LoadCommand::Merge(m)) = a.command else {
        panic!("not merge: {a:?}")
    };
    assert_eq!(
        m.reports,
        [PathBuf::from("a.json"), PathBuf::from("b.json")]
    );
    assert_eq!(m.json, Some(PathBuf::from("m.json")));
    // No --url needed; no report is refused; run flags do not mix with it.
    assert!(try_parse(&["merge"]).is_err());
    assert!(try_parse(&["--sessions", "3", "merge", "a.json"]).is_err());
}
