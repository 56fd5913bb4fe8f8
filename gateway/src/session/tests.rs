//! The session store's and the pending streams' bounds, and session ids.

use super::*;
use crate::session::subscriptions::Subscriptions;
use protocol::payload::InitializeRequestParams;
use std::sync::Arc;
use std::sync::Barrier;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

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
                        // Held: a session in use is never rested to make room, so the bound is exact.
                        let mut held = Vec::new();
                        for _ in 0..EACH {
                            let made = store.create(
                                None,
                                Generation::V2025_06_18,
                                &params,
                                Transport::StreamableHttp,
                                Duration::from_secs(60),
                                None,
                            );
                            held.extend(made.ok());
                            most.fetch_max(store.len(), Ordering::Relaxed);
                        }
                        // Held until every thread is done: one done early must not free its sessions.
                        start.wait();
                        held.len()
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
            None,
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
                            pending.open(tx, None).map(|id| (id, rx))
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
    let a = pending.open(a, None).unwrap();
    let b = pending.open(b, None).unwrap();
    let (c, _c_rx) = tokio::sync::mpsc::channel(1);
    assert!(
        pending.open(c.clone(), None).is_none(),
        "full of open streams"
    );
    drop(a_rx);
    let c = pending.open(c, None).expect("the closed stream swept out");
    assert!(pending.take(&a, None).is_none());
    let taken = pending.take(&b, None).expect("an open stream");
    let (d, _d_rx) = tokio::sync::mpsc::channel(1);
    pending.open(d, None).expect("the taken stream's slot");
    pending.put_back(&b, taken, None);
    assert_eq!(pending.len(), 2, "no room to put it back: dropped");
    assert!(pending.take(&b, None).is_none());
    assert!(pending.take(&c, None).is_some());
}

#[test]
fn a_pending_sse_stream_is_taken_only_by_the_principal_that_opened_it() {
    let pending = PendingStreams::new(4);
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let alice = Some([1u8; 16]);
    let id = pending.open(tx, alice).unwrap();
    assert!(
        pending.take(&id, Some([2u8; 16])).is_none(),
        "another principal"
    );
    assert!(pending.take(&id, None).is_none(), "no principal");
    assert_eq!(pending.len(), 1, "still there for its opener");
    assert!(pending.take(&id, alice).is_some());
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
        .create(
            None,
            Generation::V2024_11_05,
            &params,
            transport,
            idle,
            None,
        )
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
    let woken = tokio::time::timeout(Duration::from_secs(5), subscriptions.changed()).await;
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

fn initialize_params() -> InitializeRequestParams {
    serde_json::from_value(serde_json::json!({
        "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}},
        "clientInfo": {"name": "replica-test", "version": "1"}}))
    .unwrap()
}

fn store_with(ring: &str, max: usize, idle: Duration) -> SessionStore {
    let keys = crate::cluster::ClusterKeys::with(
        crate::cluster::keys::KeyRing::parse(ring).unwrap(),
        crate::cluster::KeySource::Random,
    );
    store_of(Arc::new(keys), max, idle, None)
}

/// A store of `max` actors idle after `idle`, sealing with `keys`, sharing `redis`.
fn store_of(
    keys: Arc<crate::cluster::ClusterKeys>,
    max: usize,
    idle: Duration,
    redis: Option<Arc<crate::cluster::redis::RedisLink>>,
) -> SessionStore {
    let limits = StoreLimits {
        max,
        idle,
        lifetime: Duration::from_secs(3600),
    };
    SessionStore::with_keys(limits, Default::default(), keys, redis)
}

#[actix_rt::test]
async fn another_store_with_the_same_ring_rebuilds_a_session_from_its_id_and_no_other_does() {
    let ring = crate::cluster::keys::new_key_line();
    let here = store_with(&ring, 8, Duration::from_secs(60));
    let there = store_with(&ring, 8, Duration::from_secs(60));
    let session = http_session(&here).unwrap();
    let rebuilt = there
        .get(&session.id)
        .unwrap()
        .expect("rebuilt from the id");
    assert_eq!(rebuilt.generation, Generation::V2025_06_18);
    assert_eq!(rebuilt.client_info.name, "replica-test");
    assert_eq!(
        rebuilt.client_capabilities,
        serde_json::json!({"sampling": {}})
    );
    assert!(rebuilt.is_initialized());
    assert_eq!((there.len(), there.resumed()), (1, 1));
    // The second request finds the actor: no second rebuild.
    there.get(&session.id).unwrap().unwrap();
    assert_eq!(there.resumed(), 1);
    let stranger = store_with(
        &crate::cluster::keys::new_key_line(),
        8,
        Duration::from_secs(60),
    );
    assert!(stranger.get(&session.id).unwrap().is_none());
    // Ended (DELETE) here: never rebuilt here again, however the id is presented.
    assert!(there.end(&session.id, Ending::Deleted));
    assert!(there.get(&session.id).unwrap().is_none());
    assert_eq!(there.records(), 1);
}

#[actix_rt::test]
async fn a_full_store_rests_its_idlest_unused_actor_and_rebuilds_it_on_its_next_request() {
    let ring = crate::cluster::keys::new_key_line();
    let store = store_with(&ring, 2, Duration::from_secs(60));
    let create = || http_session(&store);
    let old = create().unwrap().id.clone();
    actix_rt::time::sleep(Duration::from_millis(20)).await;
    let held = create().unwrap();
    // Full: the unused, idlest session rests (its record kept); the held one is never dropped.
    let third = create().unwrap();
    assert_eq!((store.len(), store.records(), store.rested()), (2, 1, 1));
    assert!(store.peek(&old).is_none());
    assert!(store.peek(&held.id).is_some());
    // Everything in use now: no room for the rested session's actor, and no new session.
    let _third = third;
    assert!(store.get(&old).is_err(), "no actor can be dropped");
    assert!(matches!(create(), Err(CreateError::Full(_))));
    drop(_third);
    let back = store.get(&old).unwrap().expect("rebuilt from its id");
    assert_eq!(back.id, old);
    // Its record is taken out; the third session, unused now, rested to make room for it.
    assert_eq!((store.records(), store.rested()), (1, 2));
}

#[actix_rt::test]
async fn a_rested_session_idle_past_its_limit_is_over_everywhere_it_is_known() {
    let ring = crate::cluster::keys::new_key_line();
    let store = store_with(&ring, 1, Duration::from_secs(1));
    let first = store
        .create(
            None,
            Generation::V2025_06_18,
            &initialize_params(),
            Transport::StreamableHttp,
            Duration::from_secs(1),
            None,
        )
        .unwrap()
        .id
        .clone();
    assert_eq!(store.rest_idlest(), 1);
    actix_rt::time::sleep(Duration::from_millis(2100)).await;
    assert!(store.get(&first).unwrap().is_none(), "idle too long");
    assert!(store.get(&first).unwrap().is_none(), "and stays ended");
}

#[actix_rt::test]
async fn a_session_sealed_with_a_dropped_key_ends_where_its_actor_lives() {
    use crate::reloadable::Reload;
    let dir = std::env::temp_dir().join(format!("mcpgw-dropped-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keys");
    let (old, new) = (
        crate::cluster::keys::new_key_line(),
        crate::cluster::keys::new_key_line(),
    );
    std::fs::write(&path, format!("{old}\n")).unwrap();
    let keys = Arc::new(crate::cluster::ClusterKeys::with(
        crate::cluster::keys::KeyRing::parse(&old).unwrap(),
        crate::cluster::KeySource::File(path.clone()),
    ));
    let store = store_of(keys.clone(), 8, Duration::from_secs(60), None);
    let create = || http_session(&store).unwrap();
    let sealed_with_old = create();
    // Rotation: the new key added, then moved first; the old one still opens.
    std::fs::write(&path, format!("{old}\n{new}\n")).unwrap();
    keys.reload().unwrap();
    std::fs::write(&path, format!("{new}\n{old}\n")).unwrap();
    keys.reload().unwrap();
    assert!(store.get(&sealed_with_old.id).unwrap().is_some());
    let sealed_with_new = create();
    // The old key dropped: its session ends although its actor lives here; the new one goes on.
    std::fs::write(&path, format!("{new}\n")).unwrap();
    keys.reload().unwrap();
    assert!(store.get(&sealed_with_old.id).unwrap().is_none());
    assert!(store.get(&sealed_with_new.id).unwrap().is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With replicas sharing Redis, a session idle on this replica may be busy on another: its actor goes, the
/// session does not (its next request here asks Redis). Alone, idle here is idle: it ends.
#[actix_rt::test]
async fn an_actor_idle_here_ends_its_session_alone_and_only_rests_with_redis() {
    let ring = crate::cluster::keys::new_key_line();
    let store = |redis: bool| {
        let keys = crate::cluster::ClusterKeys::with(
            crate::cluster::keys::KeyRing::parse(&ring).unwrap(),
            crate::cluster::KeySource::Random,
        );
        // Nothing listens on port 1: the link is never used by `get`.
        let link = redis.then(|| {
            Arc::new(crate::cluster::redis::RedisLink::open("redis://127.0.0.1:1", "test").unwrap())
        });
        store_of(Arc::new(keys), 8, Duration::from_millis(300), link)
    };
    for (redis, kept) in [(false, false), (true, true)] {
        let store = store(redis);
        let session = store
            .create(
                None,
                Generation::V2025_06_18,
                &initialize_params(),
                Transport::StreamableHttp,
                Duration::from_millis(300),
                None,
            )
            .unwrap();
        let id = session.id.clone();
        drop(session);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !store.is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the actor never idled out"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(store.get(&id).unwrap().is_some(), kept, "redis: {redis}");
    }
}

#[test]
fn a_full_store_makes_room_for_every_racing_initialize() {
    // Threads (each its own actix system, as HTTP workers are) keep opening sessions they do not hold in a
    // full store: every actor there is idle and unused, so every initialize gets one by resting another,
    // however the rests race (two requests resting the same actors, another taking the room one made).
    // Before, the request whose rest found its actors gone was refused "the gateway holds its maximum".
    // A thread holds at most a slot it is filling and the session it just made: with more than twice as
    // many slots as threads, some actor can always rest.
    const MAX: usize = 24;
    const THREADS: usize = 8;
    const EACH: usize = 150;
    let ring = crate::cluster::keys::new_key_line();
    let store = Arc::new(store_with(&ring, MAX, Duration::from_secs(60)));
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (store, start) = (store.clone(), start.clone());
            std::thread::spawn(move || {
                actix_rt::System::new().block_on(async move {
                    start.wait();
                    let mut refused = 0;
                    for _ in 0..EACH {
                        let made = http_session(&store);
                        refused += usize::from(made.is_err());
                    }
                    // The actors started here run (and stop) before this system does.
                    actix_rt::time::sleep(Duration::from_millis(100)).await;
                    refused
                })
            })
        })
        .collect();
    let refused: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(
        refused, 0,
        "initializes refused while idle actors could rest"
    );
    assert!(store.len() <= MAX);
    assert_eq!(store.rested() as usize, THREADS * EACH - store.len());
}

#[actix_rt::test]
async fn a_session_holding_a_subscription_never_rests_and_rests_once_it_holds_none() {
    let ring = crate::cluster::keys::new_key_line();
    let store = store_with(&ring, 4, Duration::from_secs(60));
    let create = || http_session(&store).unwrap().id.clone();
    let subscribed = create();
    actix_rt::time::sleep(Duration::from_millis(20)).await;
    let other = create();
    let subscriptions = &store.sessions.subscriptions;
    subscriptions
        .subscribe(&subscribed, "file:///a", "b")
        .unwrap();
    // The idlest session holds a subscription: the other one rests instead.
    assert_eq!(store.rest_idlest(), 1);
    assert!(store.peek(&subscribed).is_some());
    assert!(store.peek(&other).is_none());
    assert_eq!(store.rest_idlest(), 0, "nothing else can rest");
    // Unsubscribed from everything, it holds nothing and rests.
    subscriptions.unsubscribe(&subscribed, "file:///a");
    assert_eq!(store.rest_idlest(), 1);
    assert!(store.peek(&subscribed).is_none());
    assert_eq!(store.records(), 2);
}

/// A 2025-06-18 Streamable HTTP session of `store`, idle after 60 s, bound to no principal.
fn http_session(store: &SessionStore) -> Result<Arc<Session>, CreateError> {
    store.create(
        None,
        Generation::V2025_06_18,
        &initialize_params(),
        Transport::StreamableHttp,
        Duration::from_secs(60),
        None,
    )
}
