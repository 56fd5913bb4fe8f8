//! What `serve` says at start about how requests are authenticated and what the key ring allows (never a
//! credential, never a key).

use crate::config::Config;

/// Says at start how requests are authenticated (never a credential).
pub(super) fn announce_auth(config: &Config, auth: Option<&crate::auth::Authenticator>, stdio: bool) {
    match auth {
        None if stdio => {}
        None => tracing::info!(
            "no [auth]: every client that reaches the listener may call every tool (see docs/src/security.md)"
        ),
        Some(a) => {
            tracing::info!(
                api_keys = config.auth.api_keys.len(),
                jwt = config.auth.jwt.is_some(),
                oauth = a.oauth().is_some(),
                scope_rules = config.auth.scopes.len(),
                "requests are authenticated"
            );
            if stdio {
                tracing::info!("stdio is trusted (local): [auth] applies to HTTP only");
            }
        }
    }
}

/// Says at start what the key ring allows: with none configured, sessions live only in this process.
pub(super) fn announce_keys(keys: &crate::cluster::ClusterKeys, config: &Config) {
    let ring = keys.ring();
    if ring.is_shared() {
        tracing::info!(source = ?keys.source(), keys = ?ring.ids(),
            "session key ring read: the first key seals; replicas sharing it serve each other's sessions");
        if config.cluster.redis.is_none() {
            tracing::warn!(
                "a key ring without [cluster] redis: a DELETE and idle expiry hold on each replica only"
            );
        }
    } else {
        tracing::info!(
            "no session key ring ([cluster] keys_file or MCPGW_SESSION_KEYS): sessions and request states live only in this process, and a restart ends them"
        );
    }
}

