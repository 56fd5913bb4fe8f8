//! What a release is made of (issue 35 §3): the version `mcpgw --version` prints is CHANGELOG.md's newest
//! section; the LICENSE is the Apache-2.0 the workspace declares; the release workflow's version gate, run
//! here as its step's own shell text, passes the right tag and refuses another; what ships is the dist build.

use std::process::Command;
use std::time::Duration;

use crate::interop::peers::run_bounded;
use crate::support::*;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_version_printed_is_the_changelogs_newest() {
    let out = Command::new(mcpgw()).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("mcpgw {VERSION}")
    );
    let changelog = read("CHANGELOG.md");
    let newest = changelog
        .lines()
        .find(|l| l.starts_with("## "))
        .expect("CHANGELOG.md has a version section");
    assert!(
        newest.starts_with(&format!("## {VERSION} ")) || newest == format!("## {VERSION}"),
        "CHANGELOG.md's newest section {newest:?} is not {VERSION}"
    );
}

#[test]
fn the_license_is_the_one_declared() {
    let license = read("LICENSE");
    assert!(
        license.trim_start().starts_with("Apache License\n")
            && license.contains("Version 2.0, January 2004")
            && license.contains("END OF TERMS AND CONDITIONS"),
        "LICENSE is not the Apache License 2.0 text"
    );
    assert!(read("Cargo.toml").contains("\nlicense = \"Apache-2.0\"\n"));
}

/// The `run: |` text of the step named `name` in a workflow.
fn step_script(workflow: &str, name: &str) -> String {
    let lines: Vec<&str> = workflow.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == format!("name: {name}"))
        .unwrap_or_else(|| panic!("no step {name:?}"));
    let run = (at..lines.len())
        .find(|&i| lines[i].trim() == "run: |")
        .expect("the step has a run block");
    let indent = lines[run + 1].len() - lines[run + 1].trim_start().len();
    lines[run + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| format!("{}\n", l.get(indent..).unwrap_or_default()))
        .collect()
}

#[test]
fn the_release_workflows_version_gate_passes_the_tag_and_refuses_another() {
    let workflow = read(".github/workflows/release.yml");
    let script = step_script(&workflow, "tag, Cargo.toml and CHANGELOG.md agree");
    let dir = TempDir::new("release-gate");
    // (tag, passes)
    for (tag, passes) in [
        (format!("v{VERSION}"), true),
        ("v0.0.0-other".to_owned(), false),
    ] {
        let output = dir.file("github-output", "");
        let mut bash = Command::new("bash");
        bash.args(["-eo", "pipefail", "-c", &script])
            .current_dir(repo_root())
            .env("TAG", &tag)
            .env("GITHUB_OUTPUT", &output);
        let (ok, stdout, stderr) = run_bounded(bash, Duration::from_secs(20));
        assert_eq!(ok, passes, "{tag}: {stdout}{stderr}");
        let written = std::fs::read_to_string(&output).unwrap();
        if passes {
            assert_eq!(written, format!("version={VERSION}\n"));
        } else {
            assert!(stdout.contains("::error::"), "{stdout}");
            assert!(written.is_empty());
        }
    }
}

#[test]
fn what_ships_is_the_dist_build() {
    let manifest = read("Cargo.toml");
    let dist = manifest
        .split("[profile.dist]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("Cargo.toml has [profile.dist]");
    for setting in [
        "lto = ",
        "strip = \"symbols\"",
        "split-debuginfo = \"packed\"",
    ] {
        assert!(dist.contains(setting), "[profile.dist] lacks {setting}");
    }
    let workflow = read(".github/workflows/release.yml");
    assert!(workflow.contains("cargo build --locked --profile dist -p gateway --bin mcpgw"));
    assert!(
        read("deploy/Dockerfile")
            .contains("cargo build --profile dist --locked -p gateway --bin mcpgw")
    );
}
