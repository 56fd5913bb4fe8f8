//! What a library user adds to a gateway (`Builder`): middlewares, servers built into their binary, and the
//! request headers those middlewares may read. Checked against the config before anything starts.

use std::sync::Arc;

use crate::config::Config;
use crate::pipeline::Added;
use crate::state::Builtins;

use super::ServeError;

/// A library user's additions to the built-in gateway.
#[derive(Debug, Clone, Default)]
pub(crate) struct Additions {
    /// Middlewares, placed by `builtin::chain`.
    pub middlewares: Added,
    /// Servers, by the name a `builtin = [NAME]` gives.
    pub servers: Builtins,
    /// The request headers middlewares may read (`MwContext::header`).
    pub headers: Arc<[http::HeaderName]>,
}

/// Headers that carry a credential or a session: no middleware reads them through `MwContext::header`
/// (the principal authentication established is `MwContext::principal`).
const UNREADABLE: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "mcp-session-id",
    "x-api-key",
];

impl Additions {
    /// The names of the middlewares, as `[[middleware]] kind = "library"` tables name them.
    pub fn middleware_names(&self) -> Arc<[String]> {
        self.middlewares
            .all()
            .map(|m| m.name().to_owned())
            .collect()
    }

    /// Everything `config` names is here (its `builtin` servers, its `library` middlewares), and no
    /// header a middleware may read carries a credential.
    pub fn check(&self, config: &Config) -> Result<(), ServeError> {
        self.servers
            .check(config)
            .map_err(|e| ServeError::Additions(e.to_string()))?;
        if let Some(why) = config.unknown_library(&self.middleware_names()) {
            return Err(ServeError::Additions(why));
        }
        if let Some(h) = self.headers.iter().find(|h| UNREADABLE.contains(&h.as_str())) {
            return Err(ServeError::Additions(format!(
                "a middleware may not read the {h} header: it carries a credential or a session"
            )));
        }
        let mut names: Vec<&str> = self.middlewares.all().map(|m| m.name()).collect();
        names.sort_unstable();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(ServeError::Additions(format!(
                "two middlewares are named {:?}: give each its own name (`Middleware::name`)",
                twice[0]
            )));
        }
        Ok(())
    }
}
