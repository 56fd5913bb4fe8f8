//! Who reads what the gateway sends a client outside any request of its own (a backend's log messages,
//! list changes, resource updates): the endpoint it came in at and its principal, as its latest request
//! presented them. `notify` judges each such message against that reader's view of the catalog (its
//! principal's `[[policy]]` view of its endpoint's selection), so a client hears only of backends its view
//! shows. A legacy session keeps its reader (`Session::reader`); a listen stream registers with one.

use std::sync::Arc;

use crate::auth::Principal;

/// A client as the views see it: its endpoint (by index, `/mcp` is 0) and its principal's name and groups
/// (never its token or scopes: neither decides a view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    /// The endpoint's index (`Endpoints::all`).
    pub endpoint: usize,
    /// The principal (name and groups only), if authentication established one.
    pub principal: Option<Principal>,
}

impl Reader {
    /// The reader of a request that arrived at endpoint `endpoint` from `principal`.
    pub fn new(endpoint: usize, principal: Option<&Principal>) -> Reader {
        Reader {
            endpoint,
            principal: principal.map(|p| Principal {
                name: p.name.clone(),
                source: p.source.clone(),
                groups: p.groups.clone(),
                scopes: Vec::new(),
                token: None,
            }),
        }
    }

    /// Whether a request from `principal` at `endpoint` is this reader.
    pub fn is(&self, endpoint: usize, principal: Option<&Principal>) -> bool {
        self.endpoint == endpoint
            && match (&self.principal, principal) {
                (None, None) => true,
                (Some(mine), Some(p)) => {
                    mine.name == p.name && mine.source == p.source && mine.groups == p.groups
                }
                _ => false,
            }
    }
}

/// A session's reader, replaced only when a request presents another (one atomic load per request
/// otherwise).
#[derive(Debug, Default)]
pub(super) struct ReaderCell(arc_swap::ArcSwapOption<Reader>);

impl ReaderCell {
    pub(super) fn get(&self) -> Option<Arc<Reader>> {
        self.0.load_full()
    }

    pub(super) fn set(&self, endpoint: usize, principal: Option<&Principal>) {
        if self
            .0
            .load()
            .as_ref()
            .is_some_and(|r| r.is(endpoint, principal))
        {
            return;
        }
        self.0
            .store(Some(Arc::new(Reader::new(endpoint, principal))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(name: &str, groups: &[&str]) -> Principal {
        Principal {
            name: name.to_owned(),
            source: crate::auth::PrincipalSource::ApiKey,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            scopes: vec!["s".to_owned()],
            token: None,
        }
    }

    #[test]
    fn a_reader_keeps_no_scope_and_is_replaced_only_by_another() {
        let cell = ReaderCell::default();
        assert!(cell.get().is_none());
        cell.set(1, Some(&principal("alice", &["g"])));
        let first = cell.get().unwrap();
        assert!(first.principal.as_ref().unwrap().scopes.is_empty());
        cell.set(1, Some(&principal("alice", &["g"])));
        assert!(Arc::ptr_eq(&first, &cell.get().unwrap()), "the same reader");
        cell.set(1, Some(&principal("alice", &["g", "h"])));
        assert_eq!(
            cell.get().unwrap().principal.as_ref().unwrap().groups,
            ["g", "h"]
        );
        cell.set(0, None);
        assert_eq!(*cell.get().unwrap(), Reader::new(0, None));
    }
}
