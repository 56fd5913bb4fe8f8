//! What replicas tell each other through Redis (`redis.rs` publishes, `listen.rs` reads): an event about a
//! session, named by its key, never by its id. Pure: the events and their JSON, no I/O.

use serde::{Deserialize, Serialize};

/// The session an event is about: its key (what is published), or, in an event of a replica from before
/// keys were published, its full id (read, never written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Named {
    /// The session's key (`session::replicas::key_text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The session's id, as older replicas published it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Named {
    /// A session named by its key.
    pub fn key(key: &str) -> Named {
        Named {
            key: Some(key.to_owned()),
            id: None,
        }
    }
}

/// A message from another replica.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ClusterEvent {
    /// The session was deleted.
    Revoke {
        /// The session.
        #[serde(flatten)]
        session: Named,
        /// When its id expires (Unix seconds; 0: not said, as older replicas did not).
        #[serde(default)]
        expires_at: u64,
    },
    /// `logging/setLevel` on another replica.
    Level {
        /// The session.
        #[serde(flatten)]
        session: Named,
        /// The level's index.
        level: u8,
    },
    /// `resources/subscribe` (`on`) or `resources/unsubscribe` on another replica.
    Subscribe {
        /// The session.
        #[serde(flatten)]
        session: Named,
        /// The resource.
        uri: String,
        /// The backend serving it.
        backend: String,
        /// Subscribed (else unsubscribed).
        on: bool,
    },
    /// A legacy client's answer to a question this replica asked.
    Answer {
        /// The session.
        #[serde(flatten)]
        session: Named,
        /// The client's JSON-RPC response, as it sent it.
        response: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events as replicas before this change wrote and read them (their session named by its id).
    #[derive(Debug, Deserialize)]
    #[serde(tag = "op", rename_all = "snake_case")]
    #[allow(dead_code)]
    enum OlderEvent {
        Revoke {
            id: String,
        },
        Level {
            id: String,
            level: u8,
        },
        Subscribe {
            id: String,
            uri: String,
            backend: String,
            on: bool,
        },
        Answer {
            id: String,
            response: String,
        },
    }

    const KEY: &str = "00112233445566778899aabbccddeeff";
    const ID: &str = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8";

    #[test]
    fn events_name_a_session_by_its_key_never_its_id_and_older_replicas_events_are_still_read() {
        let named = || Named::key(KEY);
        let events = [
            ClusterEvent::Revoke {
                session: named(),
                expires_at: 1_900_000_000,
            },
            ClusterEvent::Level {
                session: named(),
                level: 3,
            },
            ClusterEvent::Subscribe {
                session: named(),
                uri: "file:///a".into(),
                backend: "m".into(),
                on: true,
            },
            ClusterEvent::Answer {
                session: named(),
                response: "{}".into(),
            },
        ];
        for event in events {
            let text = serde_json::to_string(&event).unwrap();
            let fields: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&text).unwrap();
            assert_eq!(fields["key"], KEY, "{text}");
            assert!(
                !fields.contains_key("id"),
                "a session id is published: {text}"
            );
            assert_eq!(serde_json::from_str::<ClusterEvent>(&text).unwrap(), event);
            // An older replica cannot read it: it ignores it (a parse error, logged at debug), no more.
            assert!(serde_json::from_str::<OlderEvent>(&text).is_err(), "{text}");
        }
        // What an older replica published is still read, by its id.
        let older = [
            (
                format!(r#"{{"op":"revoke","id":"{ID}"}}"#),
                ClusterEvent::Revoke {
                    session: Named {
                        key: None,
                        id: Some(ID.into()),
                    },
                    expires_at: 0,
                },
            ),
            (
                format!(r#"{{"op":"level","id":"{ID}","level":2}}"#),
                ClusterEvent::Level {
                    session: Named {
                        key: None,
                        id: Some(ID.into()),
                    },
                    level: 2,
                },
            ),
        ];
        for (text, want) in older {
            assert_eq!(
                serde_json::from_str::<ClusterEvent>(&text).unwrap(),
                want,
                "{text}"
            );
        }
    }
}
