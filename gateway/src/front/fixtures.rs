//! What the front doors' in-process tests share: a gateway whose one backend is the builtin mock.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use handlers::BackendHandle;
use tokio::sync::mpsc;

use crate::config::Config;
use crate::state::Gateway;

/// A gateway configured by `head` (TOML tables before the backend) with the builtin mock as backend `m`, and
/// its first catalog (the events the backend sends are kept, unread, in the receiver returned).
pub(crate) async fn mocked(head: &str) -> (Arc<Gateway>, mpsc::Receiver<handlers::BackendEvent>) {
    let text = format!("{head}\n[[backend]]\nname = \"m\"\nbuiltin = [\"mock-backend\"]\n");
    let config = Config::from_toml_str(&text, Path::new("t.toml")).unwrap();
    let (events, rx) = mpsc::channel(64);
    let mock = mock::InProcessMock::from_words(&[]).unwrap();
    let transport = handlers::Transport::InProcess(handlers::InProcess(Arc::new(mock)));
    let m = BackendHandle::start(handlers::BackendConfig::new("m", transport), events);
    let keys = Arc::new(crate::cluster::ClusterKeys::random());
    let gw = Arc::new(Gateway::new(config, [("m".to_owned(), m)].into(), keys));
    let first = crate::notify::listing::first_catalog(&gw).await.unwrap();
    gw.catalog.replace(Arc::new(first));
    (gw, rx)
}
