//! The servers built into this binary, by the name a `[[backend]] builtin = [NAME, …]` gives: the mock
//! (`mock-backend`, with its flags) and whatever a library user added (`Builder::backend`). Each is served
//! in-process (`handlers::InProcess`). It must not start anything: `start` asks it for a transport.

use std::collections::BTreeMap;
use std::sync::Arc;

use handlers::{InProcess, InProcessServer, Transport};

/// The name of the built-in mock, the one built-in server that takes flags.
pub const MOCK: &str = "mock-backend";

/// The servers a library user added, by name.
#[derive(Clone, Default)]
pub struct Builtins(BTreeMap<String, Arc<dyn InProcessServer>>);

impl std::fmt::Debug for Builtins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// A `builtin = [...]` that names no server of this binary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("backend {backend}: builtin names {name:?}, which is not built into this binary (built in: {known})")]
pub struct UnknownBuiltin {
    /// The backend that names it.
    pub backend: String,
    /// The name.
    pub name: String,
    /// The names there are.
    pub known: String,
}

impl Builtins {
    /// Adds a server under `name` (a later one of the same name replaces it).
    pub fn add(&mut self, name: String, server: Arc<dyn InProcessServer>) {
        self.0.insert(name, server);
    }

    /// Whether a server of this name was added.
    #[cfg(any(test, feature = "internals"))]
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The transport of a `builtin` backend: the mock with its flags (checked when the config was read),
    /// or an added server (which takes none).
    pub fn transport(&self, backend: &str, words: &[String]) -> Result<Transport, UnknownBuiltin> {
        let Some((name, flags)) = words.split_first() else {
            return Err(self.unknown(backend, ""));
        };
        if name == MOCK {
            return mock::InProcessMock::from_words(flags)
                .map(|mock| Transport::InProcess(InProcess(Arc::new(mock))))
                .map_err(|_| self.unknown(backend, name));
        }
        match self.0.get(name) {
            Some(server) if flags.is_empty() => Ok(Transport::InProcess(InProcess(server.clone()))),
            _ => Err(self.unknown(backend, name)),
        }
    }

    /// Every `builtin` backend of `config` names a server of this binary.
    pub fn check(&self, config: &crate::config::Config) -> Result<(), UnknownBuiltin> {
        for b in &config.backends {
            if let Some(words) = &b.builtin {
                self.transport(&b.name, words)?;
            }
        }
        Ok(())
    }

    fn unknown(&self, backend: &str, name: &str) -> UnknownBuiltin {
        let known: Vec<&str> = std::iter::once(MOCK)
            .chain(self.0.keys().map(String::as_str))
            .collect();
        UnknownBuiltin {
            backend: backend.to_owned(),
            name: name.to_owned(),
            known: known.join(", "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_builtin_names_the_mock_or_an_added_server_and_nothing_else() {
        let mut builtins = Builtins::default();
        builtins.add("tools".into(), Arc::new(mock::InProcessMock::from_words(&[]).expect("the mock")));
        let cases: &[(&[&str], Result<(), &str>)] = &[
            (&["mock-backend"], Ok(())),
            (&["tools"], Ok(())),
            (&["tool"], Err("tool")),
            (&["tools", "--flag"], Err("tools")),
            (&[], Err("")),
        ];
        for (given, expected) in cases {
            let got = builtins.transport("b", &words(given)).map(drop);
            match expected {
                Ok(()) => assert!(got.is_ok(), "{given:?}: {got:?}"),
                Err(name) => {
                    let e = got.expect_err("refused");
                    assert_eq!(e.name, *name, "{given:?}");
                    assert_eq!(e.known, "mock-backend, tools");
                    assert!(e.to_string().contains("backend b: builtin names"), "{e}");
                }
            }
        }
    }
}
