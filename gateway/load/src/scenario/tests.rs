//! The scenario file's checks (table-driven), and the example scenarios of `scenarios/` run against the
//! mock backend in this process, their counts exact where the script makes them so.

use std::path::{Path, PathBuf};

use super::parse::parse;
use super::*;
use crate::args::tests::parse as parse_args;
use crate::{LoadError, Report, execute};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

fn group(steps: &str) -> String {
    format!("[[group]]\nname = \"g\"\nsessions = 2\n{steps}")
}

#[test]
fn bad_files_are_refused_with_their_line() {
    let cases: &[(&str, &str)] = &[
        ("", "line 1: no [[group]]"),
        ("[[group]\n", "line 1, column"),
        (
            "[[group]]\nname = \"g\"\nsessions = 1\ncolour = 1\n",
            "line 4, column 1: unknown field `colour`",
        ),
        ("[[group]]\nname = \"g\"\nsessions = \"x\"\n", "line 3"),
        (&group(""), "line 2: group \"g\": no [[group.step]]"),
        (
            &group("[[group.step]]\ndo = \"tools/call\"\n"),
            "line 5: group \"g\", step 1 (tools/call): tools/call needs tool",
        ),
        (
            &group("[[group.step]]\ndo = \"tools/list\"\n[[group.step]]\ndo = \"fly\"\n"),
            "line 7: group \"g\", step 2 (fly): unknown step \"fly\"",
        ),
        (
            &group("[[group.step]]\ndo = \"tools/list\"\ntool = \"x\"\n"),
            "tool is not a field of tools/list",
        ),
        (
            &group(
                "[[group.step]]\ndo = \"tools/call\"\ntool = \"echo\"\narguments = { t = \"{x}\" }\n",
            ),
            "arguments: unknown placeholder {x}",
        ),
        (
            &group("[[group.step]]\ndo = \"tools/list\"\nthink = \"5 parsecs\"\n"),
            "think: unknown unit",
        ),
        (
            &group("[[group.step]]\ndo = \"tools/list\"\nthink = { normal = \"5ms\" }\n"),
            "think is \"50ms\"",
        ),
        (
            &group(
                "[[group.step]]\ndo = \"tools/list\"\nthink = { uniform = [\"9ms\", \"1ms\"] }\n",
            ),
            "the first is the larger",
        ),
        (
            &group("[[group.step]]\ndo = \"tools/list\"\nweight = 2\n"),
            "weight needs order = \"weighted\"",
        ),
        (
            &group("[[group.step]]\ndo = \"tools/list\"\nrepeat = 0\n"),
            "repeat must be between 1",
        ),
        (
            &group("[[group.step]]\ndo = \"completion/complete\"\nargument = \"a\"\n"),
            "needs either prompt or uri",
        ),
        (
            &group("order = \"weighted\"\n[[group.step]]\ndo = \"tools/list\"\nweight = 0\n"),
            "weights add up to 0",
        ),
        (
            "[[group]]\nname = \"g\"\nsessions = 0\n",
            "line 2: group \"g\": sessions must be at least 1",
        ),
        (
            "[[group]]\nname = \"g\"\nsessions = 1\nera = \"future\"\n",
            "era \"future\" is not legacy, modern or mixed",
        ),
        (
            "[[group]]\nname = \"g\"\nsessions = 1\nloops = 0\n",
            "loops must be at least 1",
        ),
        (
            "[[group]]\nname = \"g\"\nsessions = 1\n[[group.step]]\ndo = \"tools/list\"\n[[group]]\nname = \"g\"\nsessions = 1\n",
            "line 7: group \"g\": the name is used by another group",
        ),
    ];
    for (text, want) in cases {
        let err = parse(text, "s.toml").unwrap_err().to_string();
        assert!(err.starts_with("scenario s.toml, line "), "{text:?}: {err}");
        assert!(err.contains(want), "{text:?}: {err}\nwant: {want}");
        let why = err.split_once(": ").map_or("", |x| x.1);
        assert!(
            why.starts_with(|c: char| !c.is_uppercase()),
            "lower case? {err}"
        );
        assert!(!err.contains("TOML"), "{err}");
    }
}

#[test]
fn a_good_file_becomes_its_groups_and_steps() {
    let s = parse(
        &std::fs::read_to_string(example("agent.toml")).unwrap(),
        "agent.toml",
    )
    .unwrap();
    assert_eq!((s.sessions(), s.era()), (3, Era::Mixed));
    let g = &s.groups[0];
    assert_eq!(
        (g.name.as_str(), g.loops, g.order),
        ("agents", Some(2), Order::Sequence)
    );
    let names: Vec<&str> = g.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tools/list",
            "tools/call",
            "add",
            "resources/read",
            "prompts/get",
            "completion/complete"
        ]
    );
    assert_eq!(g.steps[1].repeat, 2);
    assert_eq!(
        g.steps[1].think,
        Some(Think::Uniform(
            Duration::from_millis(5),
            Duration::from_millis(20)
        ))
    );
    assert_eq!(
        g.steps[2].think,
        Some(Think::Exponential(Duration::from_millis(10)))
    );
    assert!(
        matches!(&g.steps[5].action, Action::Complete { reference: Reference::Prompt(p), .. } if p == "greet")
    );
    let l = parse(
        &std::fs::read_to_string(example("listeners.toml")).unwrap(),
        "l",
    )
    .unwrap();
    assert_eq!(l.sessions(), 26);
    assert_eq!(l.groups[1].order, Order::Weighted(9));
    assert!(matches!(
        l.groups[0].steps[0].action,
        Action::Listen { hold: None }
    ));
    assert!(matches!(l.groups[2].steps[0].action, Action::Handshake));
    assert!(
        l.describe()
            .contains("idle 20×legacy, chatty 4×modern, churners 2×legacy")
    );
}

/// A mock backend in this process; its URL.
fn mock_url() -> String {
    let mut args = crate::selftest::mock_args();
    args.listen = Some("127.0.0.1:0".parse().unwrap());
    crate::selftest::start_mock(args).expect("the mock starts")
}

fn run(url: &str, file: &Path, duration: &str) -> Result<Report, LoadError> {
    let file = file.to_string_lossy().into_owned();
    let words = [
        "--url",
        url,
        "--no-progress",
        "--threads",
        "2",
        "--timeout",
        "5s",
        "--duration",
        duration,
        "--scenario",
        &file,
    ];
    execute(&parse_args(&words), url, false)
}

fn step<'a>(r: &'a Report, group: &str, name: &str) -> &'a crate::OpReport {
    r.steps
        .get(group)
        .and_then(|g| g.get(name))
        .unwrap_or_else(|| panic!("no step {group}: {name}\n{}", r.table()))
}

#[test]
fn the_agent_example_runs_each_step_exactly_as_scripted() {
    let url = mock_url();
    let r = run(&url, &example("agent.toml"), "60s").unwrap();
    let t = r.table();
    // 3 sessions × 2 loops; the echo call twice in a row.
    for (name, n) in [
        ("tools/list", 6),
        ("tools/call", 12),
        ("add", 6),
        ("resources/read", 6),
        ("prompts/get", 6),
        ("completion/complete", 6),
    ] {
        let s = step(&r, "agents", name);
        assert_eq!((s.requests, s.outcomes.ok), (n, n), "{name}\n{t}");
    }
    assert_eq!((r.requests, r.errors), (42, 0), "{t}");
    assert_eq!(r.stopped, "loops", "{t}");
    assert_eq!(r.sessions, 3);
    // Mixed: sessions 0 and 2 legacy (set up, then deleted), session 1 modern.
    assert_eq!(r.operations["initialize"].requests, 2, "{t}");
    assert_eq!(r.operations["server/discover"].requests, 1, "{t}");
    assert_eq!(r.operations["delete"].requests, 2, "{t}");
    assert!(t.contains("agents: completion/complete"), "{t}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["steps"]["agents"]["add"]["requests"], 6);
}

#[test]
fn the_listeners_example_holds_every_stream_to_the_end() {
    let url = mock_url();
    let r = run(&url, &example("listeners.toml"), "2s").unwrap();
    let t = r.table();
    let idle = step(&r, "idle", "subscriptions/listen");
    // Each idle session opens its stream once and holds it until the duration ends.
    assert_eq!((idle.requests, idle.outcomes.ok), (20, 20), "{t}");
    assert_eq!(idle.outcomes.by_http_status.get(&200), Some(&20), "{t}");
    assert_eq!(r.stopped, "duration", "{t}");
    assert_eq!(r.errors, 0, "{t}");
    let chatty = step(&r, "chatty", "tools/call");
    assert!(chatty.requests > 0 && chatty.errors == 0, "{t}");
    // A churner's turn: a new session, then a call (the run's end may fall between the two); its sessions
    // are deleted as they are replaced.
    let (new, calls) = (
        step(&r, "churners", "initialize"),
        step(&r, "churners", "tools/call"),
    );
    assert!(new.requests > 0 && new.errors == 0, "{t}");
    assert!(
        calls.requests <= new.requests && calls.requests + 2 >= new.requests,
        "{t}"
    );
    assert!(r.operations["delete"].requests >= new.requests, "{t}");
}

#[test]
fn a_tool_the_target_does_not_list_stops_the_run_before_it_starts() {
    let url = mock_url();
    let dir = std::env::temp_dir().join(format!("mcpgw-scenario-{}.toml", std::process::id()));
    std::fs::write(
        &dir,
        group("[[group.step]]\ndo = \"tools/call\"\ntool = \"nope\"\n"),
    )
    .unwrap();
    let err = run(&url, &dir, "1s").unwrap_err().to_string();
    let _ = std::fs::remove_file(&dir);
    assert!(
        err.contains("tool \"nope\" is not in the server's tools/list"),
        "{err}"
    );
    let missing = run(&url, Path::new("/nonexistent/s.toml"), "1s")
        .unwrap_err()
        .to_string();
    assert!(
        missing.starts_with("cannot read scenario /nonexistent/s.toml"),
        "{missing}"
    );
}

#[test]
fn the_asker_example_answers_every_question_in_both_eras() {
    // The mock's `asks` tool: an elicitation and a sampling question on the call's stream (legacy, the answers
    // POSTed back), or one input_required round carrying both (2026-07-28).
    let url = mock_url();
    let r = run(&url, &example("asker.toml"), "60s").unwrap();
    let t = r.table();
    let s = step(&r, "askers", "tools/call");
    // 2 sessions (one legacy, one modern) × 3 loops, each call answered in full (not isError).
    assert_eq!((s.requests, s.outcomes.ok), (6, 6), "{t}");
    let a = s.asks.expect("the step's questions");
    assert_eq!(
        (
            a.by_era.legacy.requests,
            a.by_era.legacy.questions_answered,
            a.by_era.legacy.questions_declined
        ),
        (3, 6, 0),
        "{t}"
    );
    assert_eq!(
        (
            a.by_era.modern.requests,
            a.by_era.modern.questions_answered,
            a.by_era.modern.input_required_rounds
        ),
        (3, 6, 3),
        "{t}"
    );
    assert_eq!((r.requests, r.errors), (6, 0), "{t}");
}

/// The load-testing page (docs/src/load-testing.md, "Scenarios") shows each example file as it is, and
/// every file of gateway/load/scenarios/ is shown.
#[test]
fn the_docs_show_the_example_files_as_they_are() {
    let shown = [
        ("scenario-agent", "agent.toml"),
        ("scenario-listeners", "listeners.toml"),
        ("scenario-asker", "asker.toml"),
    ];
    for (marker, file) in shown {
        assert_eq!(
            crate::docs_blocks::block(marker, "toml"),
            std::fs::read_to_string(example(file)).unwrap(),
            "the docs' block {marker} differs from gateway/load/scenarios/{file}"
        );
    }
    let mut files: Vec<String> = std::fs::read_dir(example(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut expected: Vec<&str> = shown.iter().map(|(_, f)| *f).collect();
    expected.sort_unstable();
    assert_eq!(files, expected, "every example file is shown in the docs");
}
