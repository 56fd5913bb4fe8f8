//! The session store's and the pending streams' bounds, and session ids.

use super::*;
use std::sync::Barrier;
use std::sync::atomic::AtomicUsize;

#[test]
fn max_sessions_is_exact_under_concurrent_initializes() {
    // Threads (each its own actix system, as HTTP workers are) race to create sessions against a small
    // maximum, many rounds over: exactly the maximum succeed, and no one sees the store above it.
    const MAX: usize = 4;
    const THREADS: usize = 8;
    const EACH: usize = 3;
    const ROUNDS: usize = 40;
    let params: InitializeRequestParams = serde_json::from_value(serde_json::json!({
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}))
    .unwrap();
    let params = Arc::new(params);
    for round in 0..ROUNDS {
        let store = Arc::new(SessionStore::new(MAX, Default::default()));
        let start = Arc::new(Barrier::new(THREADS));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (store, start, most, params) =
                    (store.clone(), start.clone(), most.clone(), params.clone());
                std::thread::spawn(move || {
                    actix_rt::System::new().block_on(async move {
                        start.wait();
                        let mut created = 0;
                        for _ in 0..EACH {
                            let made = store.create(
                                None,
                                Generation::V2025_06_18,
                                &params,
                                Transport::StreamableHttp,
                                Duration::from_secs(60),
                            );
                            created += usize::from(made.is_ok());
                            most.fetch_max(store.len(), Ordering::Relaxed);
                        }
                        created
                    })
                })
            })
            .collect();
        let created: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let most = most.load(Ordering::Relaxed);
        assert_eq!(
            (created, store.len(), most),
            (MAX, MAX, MAX),
            "round {round}: (created, held, most seen)"
        );
    }
}

#[actix_rt::test]
async fn a_session_gone_gives_its_slot_back() {
    let params: InitializeRequestParams = serde_json::from_value(serde_json::json!({
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}))
    .unwrap();
    let store = SessionStore::new(1, Default::default());
    let create = |idle| {
        store.create(
            None,
            Generation::V2025_06_18,
            &params,
            Transport::StreamableHttp,
            idle,
        )
    };
    let ended = create(Duration::from_secs(60)).unwrap();
    assert!(create(Duration::from_secs(60)).is_err(), "full");
    assert!(store.end(&ended.id, Ending::Deleted));
    assert!(!store.end(&ended.id, Ending::Deleted), "ended once");
    let idle = create(Duration::from_millis(50)).expect("the ended session's slot");
    assert!(create(Duration::from_secs(60)).is_err(), "full again");
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.peek(&idle.id).is_some() && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(store.peek(&idle.id).is_none(), "expired after being idle");
    assert!(
        create(Duration::from_secs(60)).is_ok(),
        "the expired session's slot"
    );
    assert_eq!(store.len(), 1);
}

#[test]
fn pending_sse_streams_are_bounded_exactly_under_concurrent_opens() {
    const MAX: usize = 4;
    const THREADS: usize = 8;
    const EACH: usize = 3;
    for round in 0..40 {
        let pending = Arc::new(PendingStreams::new(MAX));
        let start = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (pending, start) = (pending.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    // the receivers are kept: every stream stays open
                    (0..EACH)
                        .filter_map(|_| {
                            let (tx, rx) = tokio::sync::mpsc::channel(1);
                            pending.open(tx).map(|id| (id, rx))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let opened: Vec<_> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        assert_eq!((opened.len(), pending.len()), (MAX, MAX), "round {round}");
    }
}

#[test]
fn pending_sse_streams_make_room_only_from_closed_or_taken_ones() {
    let pending = PendingStreams::new(2);
    let (a, a_rx) = tokio::sync::mpsc::channel(1);
    let (b, _b_rx) = tokio::sync::mpsc::channel(1);
    let a = pending.open(a).unwrap();
    let b = pending.open(b).unwrap();
    let (c, _c_rx) = tokio::sync::mpsc::channel(1);
    assert!(pending.open(c.clone()).is_none(), "full of open streams");
    drop(a_rx);
    let c = pending.open(c).expect("the closed stream swept out");
    assert!(pending.take(&a).is_none());
    let taken = pending.take(&b).expect("an open stream");
    let (d, _d_rx) = tokio::sync::mpsc::channel(1);
    pending.open(d).expect("the taken stream's slot");
    pending.put_back(&b, taken);
    assert_eq!(pending.len(), 2, "no room to put it back: dropped");
    assert!(pending.take(&b).is_none());
    assert!(pending.take(&c).is_some());
}

#[test]
fn session_ids_are_long_unique_hex() {
    let a = new_session_id();
    let b = new_session_id();
    assert_eq!(a.len(), 64);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

/// One session of `transport` holding a subscription, in a store of one slot.
fn subscribed_session(
    transport: Transport,
    idle: Duration,
) -> (SessionStore, Arc<Subscriptions>, Arc<Session>) {
    let params: InitializeRequestParams = serde_json::from_value(serde_json::json!({
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}))
    .unwrap();
    let subscriptions = Arc::new(Subscriptions::default());
    let store = SessionStore::new(1, subscriptions.clone());
    let session = store
        .create(None, Generation::V2024_11_05, &params, transport, idle)
        .unwrap();
    subscriptions
        .subscribe(&session.id, "file:///a", "b")
        .unwrap();
    assert!(subscriptions.has_session(&session.id));
    (store, subscriptions, session)
}

/// Everything the session held is released: the store, its slot, its subscriptions (and the change
/// watcher is woken to shrink the backends' own).
async fn assert_released(
    store: &SessionStore,
    subscriptions: &Subscriptions,
    session: &Session,
    how: &str,
) {
    let woken = tokio::time::timeout(Duration::from_secs(5), subscriptions.shrunk()).await;
    assert!(woken.is_ok(), "{how}: the change watcher was not woken");
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.peek(&session.id).is_some() && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        store.peek(&session.id).is_none(),
        "{how}: still in the store"
    );
    assert!(
        !subscriptions.has_session(&session.id),
        "{how}: its subscriptions stayed"
    );
    assert_eq!(store.len(), 0, "{how}");
}

#[actix_rt::test]
async fn a_deleted_session_releases_its_subscriptions() {
    let (store, subs, session) =
        subscribed_session(Transport::StreamableHttp, Duration::from_secs(60));
    assert!(store.end(&session.id, Ending::Deleted));
    assert_released(&store, &subs, &session, "DELETE").await;
}

#[actix_rt::test]
async fn a_session_that_idles_out_releases_its_subscriptions() {
    // Before, expiry only took the session out of the store: its subscriptions stayed.
    let (store, subs, session) =
        subscribed_session(Transport::StreamableHttp, Duration::from_millis(60));
    assert_released(&store, &subs, &session, "idle expiry").await;
}

#[actix_rt::test]
async fn a_stdio_session_closed_releases_its_subscriptions() {
    let (store, subs, session) = subscribed_session(Transport::Stdio, Duration::from_secs(60));
    assert!(store.end(&session.id, Ending::StdioClosed));
    assert_released(&store, &subs, &session, "stdio close").await;
}

#[actix_rt::test]
async fn an_http_sse_session_ends_when_its_stream_closes() {
    // Before, a closed HTTP+SSE stream left its session (and subscriptions) until idle expiry.
    let (store, subs, session) = subscribed_session(Transport::HttpSse, Duration::from_secs(600));
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    session.handle.attach_stream(tx).unwrap();
    actix_rt::time::sleep(Duration::from_millis(50)).await;
    assert!(
        store.peek(&session.id).is_some(),
        "ended while its stream is open"
    );
    drop(rx);
    assert_released(&store, &subs, &session, "HTTP+SSE close").await;
}

#[actix_rt::test]
async fn a_streamable_http_session_outlives_its_get_stream() {
    // The GET stream of a Streamable HTTP session is optional: closing it ends nothing.
    let (store, subs, session) =
        subscribed_session(Transport::StreamableHttp, Duration::from_secs(600));
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    session.handle.attach_stream(tx).unwrap();
    drop(rx);
    actix_rt::time::sleep(Duration::from_millis(1500)).await;
    assert!(store.peek(&session.id).is_some());
    assert!(subs.has_session(&session.id));
}
