//! The interop matrix's stack: one `mcpgw` fronting, at once, seven real backends — the Python SDK's
//! Streamable HTTP server stateful (`py`) and stateless (`pyless`), and over stdio `mcp-server-time`,
//! `mcp-server-git` (a temporary repository on its own branch), `server-everything` (`ev`), `server-memory`
//! (a temporary store) and `server-filesystem` (rooted in a temporary directory) — and what every client
//! does through it ([`Plan`]) and how its report is judged ([`check`]).

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use super::peers::{self, Deps, Proc};
use crate::support::{self, Running, TempDir};

/// The branch the stack's git repository is on.
const BRANCH: &str = "interop-branch";
/// The text of the file the filesystem backend serves (non-ASCII on purpose).
const FILE_TEXT: &str = "interop file ✓ — read through mcpgw\n";
/// The text of the Python backends' resource.
const README: &str = "py-interop readme: 42 lines of nothing";

/// The gateway and the processes behind it; everything is stopped and removed on drop.
pub struct Stack {
    pub gateway: Running,
    py: Proc,
    pyless: Proc,
    repo: PathBuf,
    file: PathBuf,
    _dir: TempDir,
}

impl Stack {
    /// Starts the backends and `mcpgw` in front of them, then waits (bounded) until the gateway lists a tool
    /// of each.
    pub fn start(deps: &Deps, name: &str) -> Stack {
        let dir = TempDir::new(&format!("matrix-{name}"));
        let repo = git_repository(&dir);
        let root = dir.0.join("files");
        std::fs::create_dir_all(&root).unwrap();
        let file = root.join("hello.txt");
        std::fs::write(&file, FILE_TEXT).unwrap();
        let py = peers::py_server(deps, &[]);
        let pyless = peers::py_server(deps, &["--stateless", "--notes", "stateless"]);
        let path = |p: &std::path::Path| p.display().to_string();
        let node = |entry: &std::path::Path, args: &[String]| {
            let mut cmd = vec![path(&deps.node), path(entry)];
            cmd.extend(args.iter().cloned());
            toml_array(&cmd)
        };
        let config = format!(
            "[[backend]]\nname = \"py\"\nurl = {py}\n\n\
             [[backend]]\nname = \"pyless\"\nurl = {pyless}\n\n\
             [[backend]]\nname = \"time\"\ncommand = {time}\n\n\
             [[backend]]\nname = \"git\"\ncommand = {git}\nenv = {{ LC_ALL = \"C\" }}\n\n\
             [[backend]]\nname = \"everything\"\nprefix = \"ev\"\ncommand = {everything}\n\n\
             [[backend]]\nname = \"memory\"\ncommand = {memory}\nenv = {{ MEMORY_FILE_PATH = {store} }}\n\n\
             [[backend]]\nname = \"fs\"\ncommand = {fs}\n",
            py = toml_string(&py.url),
            pyless = toml_string(&pyless.url),
            time = toml_array(&[
                path(&deps.time_server),
                "--local-timezone".into(),
                "UTC".into()
            ]),
            git = toml_array(&[path(&deps.git_server), "--repository".into(), path(&repo)]),
            everything = node(&deps.everything, &["stdio".into()]),
            memory = node(&deps.memory, &[]),
            store = toml_string(&path(&dir.0.join("memory.jsonl"))),
            fs = node(&deps.filesystem, &[path(&root)]),
        );
        let gateway = support::gateway(&config, &dir);
        peers::wait_for_tools(
            &gateway,
            &[
                "py__py_add",
                "pyless__py_add",
                "time__convert_time",
                "git__git_branch",
                "ev__echo",
                "memory__open_nodes",
                "fs__read_text_file",
            ],
        );
        Stack {
            gateway,
            py,
            pyless,
            repo,
            file,
            _dir: dir,
        }
    }

    pub fn url(&self) -> &str {
        &self.gateway.url
    }

    /// What a client named `client` connecting in `mode` does through this stack.
    pub fn plan(&self, client: &str, mode: &str) -> Plan {
        let entity = format!("entity-{client}-{mode}");
        let observation = format!("observed by {client} in mode {mode} ✓");
        Plan {
            calls: vec![
                ("py__py_add".into(), json!({"a": 2, "b": 40})),
                ("pyless__py_add".into(), json!({"a": 20, "b": 22})),
                (
                    "time__convert_time".into(),
                    json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
                ),
                (
                    "git__git_branch".into(),
                    json!({"repo_path": self.repo.display().to_string(), "branch_type": "local"}),
                ),
                (
                    "ev__echo".into(),
                    json!({"message": "interop ✓ \"quoted\""}),
                ),
                (
                    "memory__create_entities".into(),
                    json!({"entities": [{"name": entity, "entityType": "interop", "observations": [observation]}]}),
                ),
                ("memory__open_nodes".into(), json!({"names": [entity]})),
                (
                    "fs__read_text_file".into(),
                    json!({"path": self.file.display().to_string()}),
                ),
            ],
            reads: vec![
                "py://notes/readme".into(),
                "py://stateless/readme".into(),
                "memory://knowledge-graph".into(),
                "demo://resource/dynamic/text/1".into(),
            ],
            prompts: vec![
                ("py__py_greet".into(), json!({"name": "Ada"})),
                ("pyless__py_greet".into(), json!({"name": "Bob"})),
                (
                    "ev__args-prompt".into(),
                    json!({"city": "Paris", "state": "TX"}),
                ),
            ],
            entity,
            observation,
        }
    }

    /// The gateway's and the Python backends' stderr so far, for a failure message.
    pub fn logs(&self) -> String {
        let gateway: Vec<String> = self.gateway.log.try_iter().collect();
        let tail = |lines: &[String]| lines[lines.len().saturating_sub(40)..].join("\n");
        format!(
            "--- mcpgw stderr (last 40 lines) ---\n{}\n--- py_server stderr ---\n{}\n--- py_server --stateless stderr ---\n{}",
            tail(&gateway),
            tail(&self.py.drain_log()),
            tail(&self.pyless.drain_log())
        )
    }
}

/// A repository with one commit on [`BRANCH`].
fn git_repository(dir: &TempDir) -> PathBuf {
    let repo = dir.0.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README"), "interop\n").unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=interop",
                "-c",
                "user.email=interop@localhost",
            ])
            .args(args)
            .current_dir(&repo)
            .env("LC_ALL", "C")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", BRANCH]);
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "first"]);
    repo
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn toml_array(items: &[String]) -> String {
    serde_json::to_string(items).unwrap()
}

/// What every client does, in order: the calls (one tool of every backend; memory's entity is created, then
/// read back), the resource reads and the prompts.
#[derive(Debug, Clone)]
pub struct Plan {
    pub calls: Vec<(String, Value)>,
    pub reads: Vec<String>,
    pub prompts: Vec<(String, Value)>,
    entity: String,
    observation: String,
}

impl Plan {
    /// A plan of these calls only (for checks without the gateway).
    pub fn calls_only(calls: Vec<(String, Value)>) -> Plan {
        Plan {
            calls,
            reads: Vec::new(),
            prompts: Vec::new(),
            entity: String::new(),
            observation: String::new(),
        }
    }

    /// The command-line arguments of the script clients (`py_client.py`, `ts_client.mjs`) for this plan.
    pub fn script_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (name, arguments) in &self.calls {
            args.extend(["--call".into(), name.clone(), arguments.to_string()]);
        }
        for uri in &self.reads {
            args.extend(["--read".into(), uri.clone()]);
        }
        for (name, arguments) in &self.prompts {
            args.extend(["--prompt".into(), name.clone(), arguments.to_string()]);
        }
        args
    }
}

/// Judges a client's report (the shape `py_client.py` documents) against the plan; what is wrong.
pub fn check(report: &Value, plan: &Plan, expected_version: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if report["protocolVersion"] != expected_version {
        problems.push(format!(
            "negotiated {} (expected {expected_version})",
            report["protocolVersion"]
        ));
    }
    let tools: Vec<&str> = entries(report, "tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    check_tools(&tools, plan, &mut problems);
    let calls = entries(report, "calls");
    if calls.len() != plan.calls.len() {
        problems.push(format!(
            "{} calls reported, {} made",
            calls.len(),
            plan.calls.len()
        ));
    }
    for ((name, _), call) in plan.calls.iter().zip(calls) {
        if let Err(p) = check_call(name, call, plan) {
            problems.push(format!("{name}: {p}"));
        }
    }
    let reads = entries(report, "reads");
    if reads.len() != plan.reads.len() {
        problems.push(format!(
            "{} reads reported, {} made",
            reads.len(),
            plan.reads.len()
        ));
    }
    for (uri, read) in plan.reads.iter().zip(reads) {
        if let Err(p) = check_read(uri, read, plan) {
            problems.push(format!("read {uri}: {p}"));
        }
    }
    let prompts = entries(report, "prompts");
    if prompts.len() != plan.prompts.len() {
        problems.push(format!(
            "{} prompts reported, {} got",
            prompts.len(),
            plan.prompts.len()
        ));
    }
    for ((name, _), prompt) in plan.prompts.iter().zip(prompts) {
        if let Err(p) = check_prompt(name, prompt) {
            problems.push(format!("prompt {name}: {p}"));
        }
    }
    problems
}

fn entries<'a>(report: &'a Value, key: &str) -> &'a [Value] {
    report[key]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Every planned tool is listed, every listed name has a backend's prefix, and none is listed twice.
fn check_tools(tools: &[&str], plan: &Plan, problems: &mut Vec<String>) {
    for (name, _) in &plan.calls {
        if !tools.contains(&name.as_str()) {
            problems.push(format!("tools/list lacks {name}"));
        }
    }
    let prefixes = [
        "py__", "pyless__", "time__", "git__", "ev__", "memory__", "fs__",
    ];
    for t in tools {
        if !prefixes.iter().any(|p| t.starts_with(p)) {
            problems.push(format!(
                "tools/list has {t:?}, which no backend prefix explains"
            ));
        }
    }
    let mut sorted = tools.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != tools.len() {
        problems.push("tools/list repeats a name".to_owned());
    }
}

fn check_call(name: &str, call: &Value, plan: &Plan) -> Result<(), String> {
    if call["name"] != name {
        return Err(format!("answered as {}", call["name"]));
    }
    if call["ok"] != true {
        return Err(format!("the call failed: {}", call["error"]));
    }
    if call["isError"] == true {
        return Err(format!("isError result: {}", call["text"]));
    }
    let text = call["text"].as_str().unwrap_or_default();
    let s = &call["structuredContent"];
    let entity = |e: &Value| {
        e["name"] == plan.entity.as_str() && e["observations"] == json!([plan.observation])
    };
    let ok = match name {
        "py__py_add" | "pyless__py_add" => text.trim() == "42" && *s == json!({"result": 42}),
        "time__convert_time" => {
            text.contains("+9.0h")
                && s["time_difference"] == "+9.0h"
                && s["source"]["timezone"] == "UTC"
                && s["target"]["timezone"] == "Asia/Tokyo"
                && s["target"]["datetime"]
                    .as_str()
                    .is_some_and(|d| d.ends_with("T21:00:00+09:00"))
        }
        "git__git_branch" => text.trim() == format!("* {BRANCH}"),
        "ev__echo" => text == "Echo: interop ✓ \"quoted\"",
        "memory__create_entities" => s["entities"]
            .as_array()
            .is_some_and(|e| e.len() == 1 && entity(&e[0])),
        // what was created reads back
        "memory__open_nodes" => s["entities"]
            .as_array()
            .is_some_and(|e| e.len() == 1 && entity(&e[0])),
        "fs__read_text_file" => text == FILE_TEXT,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "unexpected answer: text {text:?}, structuredContent {s}"
        ))
    }
}

fn check_read(uri: &str, read: &Value, plan: &Plan) -> Result<(), String> {
    if read["uri"] != uri {
        return Err(format!("answered as {}", read["uri"]));
    }
    if read["ok"] != true {
        return Err(format!("the read failed: {}", read["error"]));
    }
    let contents = entries(read, "contents");
    let [content] = contents else {
        return Err(format!("{} contents, expected 1", contents.len()));
    };
    let text = content["text"].as_str().unwrap_or_default();
    let ok = content["uri"] == uri
        && match uri {
            "py://notes/readme" | "py://stateless/readme" => text == README,
            // the entity this client created is in the graph
            "memory://knowledge-graph" => serde_json::from_str::<Value>(text).is_ok_and(|g| {
                entries(&g, "entities").iter().any(|e| {
                    e["name"] == plan.entity.as_str()
                        && e["observations"] == json!([plan.observation])
                })
            }),
            "demo://resource/dynamic/text/1" => {
                text.starts_with("Resource 1: This is a plaintext resource")
            }
            _ => false,
        };
    if ok {
        Ok(())
    } else {
        Err(format!("unexpected contents: {content}"))
    }
}

fn check_prompt(name: &str, prompt: &Value) -> Result<(), String> {
    if prompt["name"] != name {
        return Err(format!("answered as {}", prompt["name"]));
    }
    if prompt["ok"] != true {
        return Err(format!("the prompt failed: {}", prompt["error"]));
    }
    let expected = match name {
        "py__py_greet" => "Say hello to Ada, from py-interop.",
        "pyless__py_greet" => "Say hello to Bob, from py-interop.",
        "ev__args-prompt" => "What's weather in Paris, TX?",
        _ => return Err("not planned".to_owned()),
    };
    let messages = entries(prompt, "messages");
    match messages {
        [m] if m["role"] == "user" && m["text"] == expected => Ok(()),
        _ => Err(format!("unexpected messages: {}", prompt["messages"])),
    }
}
