use super::*;

fn caller(name: &str) -> Option<Caller> {
    Some(Caller::new("principal", name.as_bytes()))
}

fn over_share(share: usize) -> Failure {
    Failure::OverShare {
        backend: "m".into(),
        share,
    }
}

/// `n` permits for `who`, each of which must be granted.
fn take_n(shares: &Arc<Shares>, who: Option<Caller>, n: usize) -> Vec<Held> {
    (0..n)
        .map(|i| {
            shares
                .take(who, "m")
                .unwrap_or_else(|f| panic!("take {} of {n} refused: {f}", i + 1))
        })
        .collect()
}

#[test]
fn one_caller_under_no_contention_may_use_the_free_permits_beyond_its_share() {
    // 64 permits, the default share of 16: one caller's 40 concurrent requests all go through.
    let shares = Arc::new(Shares::new(64, share_of(64, None)));
    let held = take_n(&shares, caller("alone"), 40);
    assert_eq!((shares.in_flight(), shares.free()), (40, 24));
    // It may go on while more than a share's worth stays free: up to 64 - 16.
    let more = take_n(&shares, caller("alone"), 8);
    assert_eq!(
        shares.take(caller("alone"), "m").unwrap_err(),
        over_share(16),
        "the last 16 permits are kept for callers under their share"
    );
    drop((held, more));
    assert_eq!((shares.free(), shares.callers()), (64, 0));
}

#[test]
fn a_newcomer_is_served_while_a_greedy_caller_holds_more_than_its_share() {
    // 8 permits, a share of 2.
    let shares = Arc::new(Shares::new(8, 2));
    let (greedy, newcomer, third) = (caller("greedy"), caller("newcomer"), caller("third"));
    // No contention: the greedy caller takes what it wants, up to leaving a share free.
    let mut greedy_held = take_n(&shares, greedy, 6);
    assert_eq!(shares.free(), 2);
    assert_eq!(
        shares.take(greedy, "m").unwrap_err(),
        over_share(2),
        "scarce: it is refused first"
    );
    // A newcomer arriving while it holds three times its share is served, and so is a third caller.
    let newcomer_held = take_n(&shares, newcomer, 1);
    let third_held = take_n(&shares, third, 1);
    assert_eq!(shares.free(), 0);
    // Full: the greedy caller hears it is over its share, a caller under its share that the backend is full.
    assert_eq!(shares.take(greedy, "m").unwrap_err(), over_share(2));
    assert_eq!(
        shares.take(third, "m").unwrap_err(),
        Failure::Overloaded {
            backend: "m".into()
        }
    );
    // Two permits come back from the greedy caller: the third (under its share) takes one, the greedy
    // caller cannot take the other (one would stay free, less than a share).
    greedy_held.truncate(4);
    assert_eq!(shares.free(), 2);
    let third_more = take_n(&shares, third, 1);
    assert_eq!(shares.take(greedy, "m").unwrap_err(), over_share(2));
    // Once the others are done, the greedy caller may use the free permits again.
    drop((newcomer_held, third_held, third_more));
    let again = take_n(&shares, greedy, 2);
    assert_eq!(shares.free(), 2);
    drop((greedy_held, again));
    assert_eq!((shares.free(), shares.callers()), (8, 0));
}

#[test]
fn the_gateways_own_requests_count_against_no_share() {
    let shares = Arc::new(Shares::new(4, 1));
    let own = take_n(&shares, None, 4);
    assert_eq!(shares.callers(), 0);
    assert_eq!(
        shares.take(None, "m").unwrap_err(),
        Failure::Overloaded {
            backend: "m".into()
        }
    );
    drop(own);
    assert_eq!(shares.free(), 4);
}

#[test]
fn principals_sessions_and_addresses_are_different_callers() {
    assert_ne!(
        Caller::new("session", b"127.0.0.1"),
        Caller::new("address", b"127.0.0.1")
    );
    assert_ne!(
        Caller::new("principal", b"alice"),
        Caller::new("session", b"alice")
    );
    assert_eq!(
        Caller::new("address", b"127.0.0.1"),
        Caller::new("address", b"127.0.0.1")
    );
}

#[test]
fn under_concurrency_the_permits_held_beyond_shares_never_exceed_max_minus_share() {
    // 20 permits, a share of 5: one caller alone may hold 15 at most, however its takes interleave.
    let shares = Arc::new(Shares::new(20, 5));
    let busy = caller("busy");
    let mut held: Vec<Held> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    (0..10)
                        .filter_map(|_| shares.take(busy, "m").ok())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    assert!(held.len() <= 15, "{} held", held.len());
    // Racing takes may refuse early (never late): taken one at a time, it reaches exactly 15.
    while let Ok(h) = shares.take(busy, "m") {
        held.push(h);
    }
    assert_eq!(held.len(), 15);
    assert_eq!(shares.free(), 5);
    drop(held);
    assert_eq!((shares.free(), shares.callers()), (20, 0));
}
