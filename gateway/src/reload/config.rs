//! Reloading the config while serving: the file read again and validated, the backends it adds or changes
//! started beside the running ones and listed, the new catalog built beside the current one — and only if
//! all of that holds, everything swapped at once: the [`Live`] state (backends, policy, limits, middleware
//! tables, tools' deadlines), the catalog, the log level. A config that does not validate, or whose catalog
//! would have two backends exposing one name, is refused with the reason and changes nothing (the backends
//! it started are stopped again).
//!
//! Sessions, streams and connections are untouched: a reload replaces what requests are routed *to*, never a
//! client's state. Legacy sessions (and listen streams that asked) hear `notifications/*/list_changed` for
//! each list of their own view that changed — the catalog's change, or their policy's; 2026-07-28 clients see
//! the catalog's new version in their next list (and its `ttlMs`).
//!
//! A removed or changed backend is retired, never cut: new requests go to the new catalog and backends at
//! once, while requests already in flight on the old handle finish there; it is shut down when none is left
//! (or after its request timeout, when they are answered "shut down").
//!
//! It must not block the arbiter (the file is read on a blocking thread) and never runs twice at once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use handlers::BackendHandle;

use crate::config::{Config, ConfigError};
use crate::notify::fanout::Seen;
use crate::notify::listing::Attempt;
use crate::notify::readers::ReaderViews;
use crate::state::{Gateway, Live};

/// Where the config came from, to be read again.
#[derive(Debug, Clone)]
pub enum ConfigSource {
    /// A TOML file (`--config`).
    Toml(PathBuf),
    /// An `mcpServers` JSON file (`--mcp-json`).
    McpJson(PathBuf),
}

impl ConfigSource {
    /// The file.
    pub fn path(&self) -> &std::path::Path {
        match self {
            ConfigSource::Toml(p) | ConfigSource::McpJson(p) => p,
        }
    }

    fn read(&self) -> Result<Config, ConfigError> {
        match self {
            ConfigSource::Toml(p) => Config::from_toml_file(p),
            ConfigSource::McpJson(p) => crate::config::from_mcp_json(p),
        }
    }
}

/// What one reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Applied {
    /// The `Live` version now in effect.
    pub version: u64,
    /// Backends started (new names).
    pub added: Vec<String>,
    /// Backends retired (names no longer configured).
    pub removed: Vec<String>,
    /// Backends whose table changed: a new one started, the old one retired.
    pub restarted: Vec<String>,
    /// Whether the `[[policy]]` rules changed.
    pub policy: bool,
    /// Whether the `[[rate_limit]]` tables changed (unchanged ones keep their buckets).
    pub rate_limits: bool,
    /// Whether the `[[middleware]]` tables changed.
    pub middlewares: bool,
    /// The lists whose items changed in the catalog (each reader whose view changed in one heard of it).
    pub lists_changed: Vec<String>,
    /// Settings that changed but apply only at the next start.
    pub at_restart: Vec<String>,
}

/// Reloads the config from `source` (see the module docs). One at a time: a reload asked for while one
/// runs is refused at once.
#[derive(Debug)]
pub struct ConfigReload {
    gw: Arc<Gateway>,
    source: ConfigSource,
    running: AtomicBool,
}

impl ConfigReload {
    /// A reload of `gw`'s config from `source`.
    pub fn new(gw: Arc<Gateway>, source: ConfigSource) -> ConfigReload {
        ConfigReload {
            gw,
            source,
            running: AtomicBool::new(false),
        }
    }

    /// The file it reads.
    pub fn source(&self) -> &ConfigSource {
        &self.source
    }

    /// Reads the file again and applies it, or says why not (the current config stays).
    pub async fn reload(&self) -> Result<Applied, String> {
        if self.running.swap(true, Ordering::AcqRel) {
            return Err("a reload is already running".to_owned());
        }
        let source = self.source.clone();
        let read = tokio::task::spawn_blocking(move || source.read()).await;
        let result = match read {
            Ok(Ok(config)) => apply(&self.gw, config).await,
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("reading the config failed: {e}")),
        };
        self.running.store(false, Ordering::Release);
        result
    }
}

/// Applies a validated `config` to the running gateway, or says why it cannot (nothing changed then).
pub async fn apply(gw: &Arc<Gateway>, mut config: Config) -> Result<Applied, String> {
    let live = gw.live();
    let old = &live.config;
    // What applies only at start is kept as it is (and said).
    let at_restart = restart_only(old, &config);
    let log_level = config.server.log_level.clone();
    config.server = old.server.clone();
    config.server.log_level.clone_from(&log_level);
    config.cluster = old.cluster.clone();
    config.auth = old.auth.clone();
    config.egress = old.egress.clone();
    config.validate_strict().map_err(|e| e.to_string())?;
    // The rules must be able to apply under the `[auth]` that stays, not the one the file names.
    crate::config::validate_reach(
        &config.policies,
        config.auth.enabled(),
        "without [auth] (a reload keeps the [auth] the gateway started with)",
    )
    .map_err(|e| e.to_string())?;

    let before: BTreeMap<&str, &crate::config::BackendEntry> =
        old.backends.iter().map(|b| (b.name.as_str(), b)).collect();
    let mut added = Vec::new();
    let mut restarted = Vec::new();
    for b in &config.backends {
        match before.get(b.name.as_str()) {
            None => added.push(b.name.clone()),
            // An openapi backend starts again on every reload: its document may have changed.
            Some(was) if **was != *b || b.openapi.is_some() => restarted.push(b.name.clone()),
            Some(_) => {}
        }
    }
    let removed: Vec<String> = old
        .backends
        .iter()
        .filter(|b| !config.backends.iter().any(|n| n.name == b.name))
        .map(|b| b.name.clone())
        .collect();
    let fresh: BTreeSet<String> = added.iter().chain(&restarted).cloned().collect();
    if let Some(why) = per_user_changed(old, &config, &fresh) {
        return Err(why);
    }
    if config.interceptors != old.interceptors {
        return Err(
            "[[interceptor]] changed: its servers are started once; restart the gateway to apply it"
                .to_owned(),
        );
    }
    // A config for another binary (a server or middleware this one was not built with) changes nothing.
    gw.builtins.check(&config).map_err(|e| e.to_string())?;
    if let Some(why) = config.unknown_library(&gw.added_middlewares) {
        return Err(why);
    }

    // The new and changed backends, started beside the running ones.
    let mut starting = config.clone();
    starting.backends.retain(|b| fresh.contains(&b.name));
    let credentials = crate::auth::backend::prepare(&starting).await?;
    let exchanges = crate::auth::exchange::exchangers(&starting)?;
    let Some(events) = gw.events.clone() else {
        return Err("this gateway cannot start backends (no event channel)".to_owned());
    };
    let started = crate::state::start::start_backends(&starting, events, &credentials, &gw.builtins);
    let listed = list_started(gw, &config, &started).await;
    let names: Vec<&str> = config.backends.iter().map(|b| b.name.as_str()).collect();
    let snapshot = match gw.ledger.reconfigure(
        &names,
        &fresh,
        &crate::catalog::reserved(config.catalog.search),
        listed.0,
        listed.1,
        Instant::now(),
    ) {
        Ok(snapshot) => crate::notify::listing::knowing_down(snapshot, &gw.ledger, &config),
        Err(e) => {
            for handle in started.values() {
                handle.shutdown();
            }
            return Err(format!("catalog: {e}"));
        }
    };

    // Everything holds: swap.
    let mut backends: BTreeMap<String, BackendHandle> = BTreeMap::new();
    for b in &config.backends {
        let handle = started.get(&b.name).or_else(|| live.backend(&b.name));
        if let Some(handle) = handle {
            backends.insert(b.name.clone(), handle.clone());
        }
    }
    let mut all_exchanges = exchanges;
    for (name, exchanger) in &live.exchanges {
        if !fresh.contains(name) && config.backends.iter().any(|b| &b.name == name) {
            all_exchanges.insert(name.clone(), exchanger.clone());
        }
    }
    let policy = if config.policies == old.policies {
        live.policy.clone()
    } else {
        crate::policy::Policy::new(&config.policies)
    };
    let limits = if config.rate_limits == old.rate_limits {
        live.limits.clone()
    } else {
        crate::limit::Limits::new(&config.rate_limits, gw.redis.clone())
    };
    let mut applied = Applied {
        version: live.version + 1,
        policy: config.policies != old.policies,
        rate_limits: config.rate_limits != old.rate_limits,
        middlewares: config.middlewares != old.middlewares,
        at_restart,
        ..Applied::default()
    };
    let level = config.server.log_level.clone();
    let next = Live {
        version: live.version + 1,
        tool_timeouts: Live::tool_timeouts(&config),
        redaction: Live::redaction(&config),
        config: Arc::new(config),
        backends,
        policy,
        limits,
        exchanges: all_exchanges,
    };
    gw.live.store(Arc::new(next));
    let previous = gw.catalog.snapshot();
    let snapshot = Arc::new(snapshot);
    gw.catalog.replace(snapshot.clone());
    gw.resource_cache.clear();
    for method in snapshot.changed_lists(&previous) {
        applied.lists_changed.push(method.to_string());
    }
    // Each reader hears of the lists its own view changed in: the catalog's, or its policy's.
    let mut before = ReaderViews::new(live.policy.clone());
    let mut after = ReaderViews::new(gw.live().policy.clone());
    crate::notify::fanout::list_changes(
        gw,
        Seen {
            full: &previous,
            views: &mut before,
        },
        Seen {
            full: &snapshot,
            views: &mut after,
        },
    );
    for name in &fresh {
        crate::notify::changes::sync_backend(gw, name);
    }
    if let Err(why) = crate::telemetry::logs::set_level(level.as_deref().unwrap_or("info")) {
        tracing::warn!(%why, "the log level is kept");
    }
    for name in restarted.iter().chain(&removed) {
        if let Some(old) = live.backend(name) {
            retire(old.clone());
        }
    }
    added.sort();
    applied.added = added;
    applied.removed = removed;
    applied.restarted = restarted;
    tracing::info!(
        version = applied.version,
        added = ?applied.added,
        removed = ?applied.removed,
        restarted = ?applied.restarted,
        policy = applied.policy,
        rate_limits = applied.rate_limits,
        middlewares = applied.middlewares,
        lists_changed = ?applied.lists_changed,
        "config reloaded"
    );
    for setting in &applied.at_restart {
        tracing::warn!(%setting, "changed in the config file: applies at the next start");
    }
    Ok(applied)
}

/// The started backends listed, each within `list_timeout_ms` to connect and list (as at start).
async fn list_started(
    gw: &Gateway,
    config: &Config,
    started: &BTreeMap<String, BackendHandle>,
) -> (BTreeMap<String, Attempt>, Instant) {
    let deadline = Duration::from_millis(gw.config.server.list_timeout_ms);
    let listed_at = Instant::now();
    let fetches = config.backends.iter().filter_map(|b| {
        let handle = started.get(&b.name)?.clone();
        let naming = crate::notify::listing::Naming::of(b);
        Some(async move {
            (
                handle.name().to_owned(),
                crate::notify::listing::settle_and_list(&handle, &naming, deadline).await,
            )
        })
    });
    (join_all(fetches).await.into_iter().collect(), listed_at)
}

/// Shuts a retired backend down once the requests it still has in flight are answered (each within the
/// backend's own deadline; past it what remains is answered "shut down").
fn retire(handle: BackendHandle) {
    actix_rt::spawn(async move {
        let status = handle.status();
        tracing::info!(
            backend = handle.name(),
            in_flight = status.in_flight,
            "backend retired"
        );
        let until = tokio::time::Instant::now() + handle.request_timeout() + Duration::from_secs(1);
        while tokio::time::Instant::now() < until {
            let s = handle.status();
            if s.in_flight == 0 && s.control_in_flight == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        handle.shutdown();
    });
}

/// The settings that changed between `old` and `new` but apply only at start: `[server]` (but its
/// `log_level`, and what the command line set: `--listen`, `--log-format`), `[cluster]`, `[auth]`, `[egress]`
/// (the clients that fetch under it are built at start), `[[endpoint]]` (routes are registered at start),
/// `[authorization]` (`oauth::Authorizations` is made at start).
fn restart_only(old: &Config, new: &Config) -> Vec<String> {
    let mut changed = Vec::new();
    let mut server = new.server.clone();
    server.log_level.clone_from(&old.server.log_level);
    server.listen = old.server.listen;
    server.log_format = old.server.log_format;
    if format!("{:?}", old.server) != format!("{server:?}") {
        changed.push("[server]".to_owned());
    }
    if format!("{:?}", old.cluster) != format!("{:?}", new.cluster) {
        changed.push("[cluster]".to_owned());
    }
    if format!("{:?}", old.auth) != format!("{:?}", new.auth) {
        changed.push("[auth]".to_owned());
    }
    if old.egress != new.egress {
        changed.push("[egress]".to_owned());
    }
    if old.endpoints != new.endpoints {
        changed.push("[[endpoint]]".to_owned());
    }
    if old.authorization != new.authorization {
        changed.push("[authorization]".to_owned());
    }
    changed
}

/// Why a reload cannot apply, if it adds, removes or changes a backend each user authorizes
/// (`grant = "authorization_code"`): their flows, consent links and tokens are
/// set up at start (`oauth::Authorizations`).
fn per_user_changed(
    old: &crate::config::Config,
    new: &crate::config::Config,
    fresh: &BTreeSet<String>,
) -> Option<String> {
    let per_user = |c: &crate::config::Config| -> BTreeSet<String> {
        c.backends
            .iter()
            .filter(|b| {
                b.auth
                    .as_ref()
                    .is_some_and(crate::config::BackendAuth::is_authorization_code)
            })
            .map(|b| b.name.clone())
            .collect()
    };
    let (before, after) = (per_user(old), per_user(new));
    if before != after || after.iter().any(|b| fresh.contains(b)) {
        return Some(
            "a reload does not add, remove or change a backend with grant = \"authorization_code\": restart \
             mcpgw for that"
                .to_owned(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(text: &str) -> Config {
        Config::from_toml_str(text, std::path::Path::new("t.toml")).unwrap()
    }

    #[test]
    fn a_reload_never_adds_removes_or_changes_a_per_user_backend() {
        let per_user = |name: &str| {
            format!(
                "[[backend]]\nname = \"{name}\"\nurl = \"http://127.0.0.1:9/mcp\"\n[backend.auth]\ngrant = \"authorization_code\"\n"
            )
        };
        let plain = format!(
            "[[auth.api_key]]\nprincipal = \"a\"\ndigest = \"sha256:{}\"\n\n[authorization]\n\
             public_url = \"http://127.0.0.1:8080\"\nlink_proof = \"link\"\n\n\
             [[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n",
            "0".repeat(64)
        );
        let plain = plain.as_str();
        let old = parse(&format!("{plain}{}", per_user("n")));
        let none = BTreeSet::new();
        assert_eq!(per_user_changed(&old, &old, &none), None);
        let fresh_m: BTreeSet<String> = ["m".to_owned()].into();
        assert_eq!(
            per_user_changed(&old, &old, &fresh_m),
            None,
            "another backend changed"
        );
        let fresh_n: BTreeSet<String> = ["n".to_owned()].into();
        assert!(per_user_changed(&old, &old, &fresh_n).is_some(), "changed");
        assert!(
            per_user_changed(&old, &parse(plain), &none).is_some(),
            "removed"
        );
        let more = parse(&format!("{plain}{}{}", per_user("n"), per_user("o")));
        assert!(per_user_changed(&old, &more, &none).is_some(), "added");
    }

    #[test]
    fn only_what_waits_for_a_restart_is_named_and_command_line_overrides_are_not() {
        let started = {
            let mut c = parse("[server]\nlog_level = \"info\"\n");
            // As `--listen 127.0.0.1:0 --log-format json` left it.
            c.server.listen = "127.0.0.1:0".parse().unwrap();
            c.server.log_format = crate::config::LogFormat::Json;
            c
        };
        let table = [
            ("[server]\nlog_level = \"debug\"\n", vec![]),
            ("[server]\nmax_batch = 7\n", vec!["[server]"]),
            (
                "[cluster]\nredis = \"redis://127.0.0.1:1\"\n",
                vec!["[cluster]"],
            ),
            (
                "[[auth.api_key]]\nprincipal = \"a\"\ndigest = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n",
                vec!["[auth]"],
            ),
            (
                "[egress]\ndeny_networks = [\"169.254.169.254\"]\n",
                vec!["[egress]"],
            ),
        ];
        for (text, expected) in table {
            assert_eq!(restart_only(&started, &parse(text)), expected, "{text}");
        }
    }
}
