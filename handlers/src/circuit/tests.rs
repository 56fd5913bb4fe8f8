use super::*;

fn circuit(failures: u32, window: u32) -> Circuit {
    Circuit::new(
        "m",
        CircuitConfig {
            failures,
            ratio: 0.5,
            window,
            open_for: Duration::from_secs(10),
        },
    )
}

fn run(c: &Circuit, failed: bool, now: Instant) -> bool {
    match c.pass(now) {
        Ok(pass) => {
            c.record(pass, failed, now);
            true
        }
        Err(_) => false,
    }
}

#[test]
fn consecutive_failures_open_it_and_a_probe_closes_it() {
    let c = circuit(3, 64);
    let t = Instant::now();
    for _ in 0..2 {
        assert!(run(&c, true, t));
    }
    assert!(run(&c, false, t), "a success resets the count");
    for _ in 0..3 {
        assert!(run(&c, true, t));
    }
    assert_eq!(c.state(), CircuitState::Open);
    let refused = c.pass(t + Duration::from_secs(1)).unwrap_err();
    assert_eq!(
        refused,
        Failure::CircuitOpen {
            backend: "m".into(),
            retry_in_ms: 9000
        }
    );
    // After open_for: one probe, the others refused while it runs.
    let later = t + Duration::from_secs(11);
    let probe = c.pass(later).expect("the probe goes");
    assert_eq!(c.state(), CircuitState::HalfOpen);
    assert!(c.pass(later).is_err(), "only one probe at a time");
    c.record(probe, false, later);
    assert_eq!(c.state(), CircuitState::Closed);
    assert!(run(&c, false, later));
}

#[test]
fn a_failed_probe_opens_it_again_and_an_abandoned_one_lets_the_next_probe() {
    let c = circuit(1, 64);
    let t = Instant::now();
    assert!(run(&c, true, t));
    let later = t + Duration::from_secs(11);
    drop(c.pass(later).unwrap());
    let probe = c.pass(later).expect("the abandoned probe's turn passed on");
    c.record(probe, true, later);
    assert_eq!(c.state(), CircuitState::Open);
    assert!(c.pass(later + Duration::from_secs(1)).is_err());
}

#[test]
fn a_failure_ratio_opens_it_without_a_run_of_failures() {
    let c = circuit(100, 10);
    let t = Instant::now();
    // Alternating: never two failures in a row, half of them failing.
    for i in 0..10 {
        run(&c, i % 2 == 0, t);
    }
    assert_eq!(c.state(), CircuitState::Open);
}

/// One step of a script played against a circuit that opens on one failure and stays open 10 s.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A request that succeeds (it must be let through).
    Ok,
    /// A request that fails at the transport (it must be let through).
    Fail,
    /// A request that must be refused.
    Refused,
    /// The backend became ready again (restarted, reconnected).
    Reconnect,
    /// Time passes, in seconds.
    Wait(u64),
    /// A request let through and kept in flight (numbered from 0 in the script).
    Hold,
    /// The `n`th held request ends: failed or not.
    End(usize, bool),
}

#[test]
fn a_reconnect_turns_an_open_circuit_half_open_at_once() {
    use CircuitState::{Closed, HalfOpen, Open};
    use Step::*;
    let scripts: &[(&str, &[(Step, CircuitState)])] = &[
        (
            "a closed circuit stays closed",
            &[(Ok, Closed), (Reconnect, Closed), (Fail, Open)],
        ),
        (
            "an open one probes at once, long before open_for, and the probe's success closes it",
            &[
                (Fail, Open),
                (Refused, Open),
                (Reconnect, HalfOpen),
                (Ok, Closed),
                (Ok, Closed),
            ],
        ),
        (
            "the probe's failure opens it again, for open_for",
            &[
                (Fail, Open),
                (Reconnect, HalfOpen),
                (Fail, Open),
                (Refused, Open),
                (Wait(5), Open),
                (Refused, Open),
                (Wait(6), Open),
                (Ok, Closed),
            ],
        ),
        (
            "one probe per reconnect: the others are refused while it runs",
            &[
                (Fail, Open),
                (Reconnect, HalfOpen),
                (Hold, HalfOpen),
                (Refused, HalfOpen),
                (End(0, true), Open),
                (Refused, Open),
                (Reconnect, HalfOpen),
                (Reconnect, HalfOpen),
                (Hold, HalfOpen),
                (Refused, HalfOpen),
                (End(1, false), Closed),
            ],
        ),
        (
            "a probe of the old connection judges nothing and does not hold back the new one's",
            &[
                (Fail, Open),
                (Wait(11), Open),
                (Hold, HalfOpen),
                (Reconnect, HalfOpen),
                (Hold, HalfOpen),
                (Refused, HalfOpen),
                (End(0, true), HalfOpen),
                (Refused, HalfOpen),
                (End(1, false), Closed),
            ],
        ),
    ];
    for (name, script) in scripts {
        let c = circuit(1, 64);
        let mut now = Instant::now();
        let mut held = Vec::new();
        for (i, (step, expected)) in script.iter().enumerate() {
            let at = format!("{name}: step {i} ({step:?})");
            match *step {
                Ok | Fail => assert!(run(&c, matches!(step, Fail), now), "{at}: refused"),
                Refused => assert!(c.pass(now).is_err(), "{at}: let through"),
                Reconnect => c.reconnected(),
                Wait(secs) => now += Duration::from_secs(secs),
                Hold => held.push(Some(c.pass(now).expect(&at))),
                End(n, failed) => {
                    let pass = held[n].take().expect("held once");
                    c.record(pass, failed, now);
                }
            }
            assert_eq!(c.state(), *expected, "{at}");
        }
    }
    let off = circuit(0, 20);
    off.reconnected();
    assert_eq!(off.state(), CircuitState::Closed);
}

#[test]
fn answers_never_count_and_off_means_off() {
    let answered: Result<(), Failure> = Err(Failure::Backend {
        backend: "m".into(),
        error: protocol::error::Error::new(protocol::error::ErrorCode::InvalidParams, "no"),
    });
    assert!(!counts_against(&answered));
    assert!(!counts_against(&Ok::<(), Failure>(())));
    assert!(!counts_against(&Err::<(), _>(Failure::Overloaded {
        backend: "m".into()
    })));
    assert!(counts_against(&Err::<(), _>(Failure::Timeout {
        backend: "m".into(),
        after_ms: 1
    })));
    let off = circuit(0, 20);
    let t = Instant::now();
    for _ in 0..100 {
        assert!(run(&off, true, t));
    }
    assert_eq!(off.state(), CircuitState::Closed);
}
