//! When requests are sent.
//!
//! Closed loop: every session sends its next request as soon as the previous one is answered, until the
//! duration ends or the request budget (`--requests`, shared, so the count is exact) is spent.
//!
//! Open loop (`--rate`): request `i` is due at `start + i / rate`, whatever happened before. Its latency
//! is measured from that scheduled time, not from when it was actually sent, so a slow target (or a
//! scheduler that fell behind) shows up as latency instead of silently lowering the rate: no coordinated
//! omission. Requests that fall due while the scheduler was late go out at once, in a burst. At most
//! `max_in_flight` requests are in flight; one due beyond that is not sent and is counted as `overflow`.
//! Nothing waits in a queue.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::args::Limit;
use super::session::{Ctx, Session};
use super::stats::{Op, Outcome};

/// Request tickets: `take` hands out 0, 1, 2, … up to the limit, then `None`.
#[derive(Debug)]
pub(crate) struct Budget {
    issued: AtomicU64,
    limit: Option<u64>,
}

impl Budget {
    pub(crate) fn new(limit: Option<u64>) -> Budget {
        Budget {
            issued: AtomicU64::new(0),
            limit,
        }
    }

    pub(crate) fn take(&self) -> Option<u64> {
        let n = self.issued.fetch_add(1, Ordering::Relaxed);
        match self.limit {
            Some(l) if n >= l => None,
            _ => Some(n),
        }
    }
}

/// How a schedule ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ended {
    /// Requests still in flight when the hard deadline cut them off (not counted as outcomes).
    pub(crate) abandoned: u64,
    /// Whether the hard deadline was reached.
    pub(crate) deadline: bool,
}

/// Closed loop over `sessions`; request `n` does `cycle[n % len]`.
pub(crate) async fn closed(
    ctx: Arc<Ctx>,
    sessions: &[Arc<Session>],
    cycle: Arc<[Op]>,
    limit: Limit,
    hard: CancellationToken,
) -> Ended {
    let stop_at = Instant::now() + limit.duration;
    let budget = Arc::new(Budget::new(limit.requests));
    let mut set = JoinSet::new();
    for s in sessions {
        let (s, ctx, cycle, budget) = (s.clone(), ctx.clone(), cycle.clone(), budget.clone());
        set.spawn(async move {
            while Instant::now() < stop_at {
                let Some(n) = budget.take() else { break };
                let op = cycle[(n % cycle.len() as u64) as usize];
                s.perform(&ctx, op, Instant::now()).await;
            }
        });
    }
    drain(set, &hard, &ctx).await
}

/// Open loop: the schedule of [`open_loop`] over `sessions` (slot `i` to session `i % n`).
pub(crate) async fn open(
    ctx: Arc<Ctx>,
    sessions: &[Arc<Session>],
    cycle: Arc<[Op]>,
    schedule: Schedule,
    hard: CancellationToken,
) -> Ended {
    let sessions: Arc<[Arc<Session>]> = sessions.into();
    let send = {
        let (ctx, sessions, cycle) = (ctx.clone(), sessions.clone(), cycle.clone());
        move |slot: u64, at: Instant| {
            let (ctx, cycle) = (ctx.clone(), cycle.clone());
            let s = sessions[(slot % sessions.len() as u64) as usize].clone();
            async move {
                let op = cycle[(slot % cycle.len() as u64) as usize];
                s.perform(&ctx, op, at).await;
            }
        }
    };
    let overflow = {
        let ctx = ctx.clone();
        move |slot: u64, _at: Instant| {
            let op = cycle[(slot % cycle.len() as u64) as usize];
            ctx.record(slot as usize, op, None, &Outcome::Overflow, None);
        }
    };
    let ended = open_loop(schedule, hard, send, overflow).await;
    Ended {
        abandoned: ctx.live.in_flight.load(Ordering::Relaxed),
        ..ended
    }
}

/// An open-loop schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Schedule {
    pub(crate) rate: f64,
    pub(crate) limit: Limit,
    pub(crate) max_in_flight: usize,
}

impl Schedule {
    /// How many slots the schedule has: `requests`, or every slot due before the duration ends.
    pub(crate) fn slots(&self) -> u64 {
        let in_time = (self.limit.duration.as_secs_f64() * self.rate).ceil() as u64;
        self.limit.requests.map_or(in_time, |r| r.min(in_time))
    }

    /// When slot `i` is due, after the start.
    pub(crate) fn offset(&self, i: u64) -> Duration {
        Duration::from_secs_f64(i as f64 / self.rate)
    }
}

/// Runs `schedule`: `send(slot, due)` is spawned for every slot when it falls due and fewer than
/// `max_in_flight` are in flight, `overflow(slot, due)` is called otherwise. Returns when every slot was
/// handled and every request sent has finished, or at `hard` (the requests in flight are then dropped).
///
/// The schedule runs on a thread of its own (from the runtime's blocking pool) sleeping with the operating system's resolution (tens of
/// microseconds), not on tokio's timer (whole milliseconds, which would add up to a millisecond of
/// schedule lag to every latency); the requests run on the runtime.
pub(crate) async fn open_loop<S, F, O>(
    schedule: Schedule,
    hard: CancellationToken,
    send: S,
    overflow: O,
) -> Ended
where
    S: Fn(u64, Instant) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
    O: Fn(u64, Instant) + Send + 'static,
{
    let runtime = tokio::runtime::Handle::current();
    let stop = hard.clone();
    // A blocking-pool thread of the runtime; it ends by itself after the last slot, or within a tick of
    // `hard`.
    let schedule_thread = tokio::task::spawn_blocking(move || {
        run_schedule(schedule, &stop, &runtime, send, overflow)
    });
    let Ok(tasks) = schedule_thread.await else {
        return Ended::default();
    };
    let deadline = hard.is_cancelled();
    let mut ended = drain_set(tasks, &hard).await;
    ended.deadline |= deadline;
    ended
}

/// The longest the schedule thread sleeps at once (how soon it notices `hard`).
const TICK: Duration = Duration::from_millis(10);

fn run_schedule<S, F, O>(
    schedule: Schedule,
    hard: &CancellationToken,
    runtime: &tokio::runtime::Handle,
    send: S,
    overflow: O,
) -> JoinSet<()>
where
    S: Fn(u64, Instant) -> F,
    F: Future<Output = ()> + Send + 'static,
    O: Fn(u64, Instant),
{
    let permits = Arc::new(Semaphore::new(schedule.max_in_flight));
    let slots = schedule.slots();
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    let mut i = 0u64;
    while i < slots && !hard.is_cancelled() {
        let now = Instant::now();
        let due = start + schedule.offset(i);
        if due > now {
            std::thread::sleep((due - now).min(TICK));
            continue;
        }
        // Everything due by now goes out at once (a scheduler that was late catches up).
        while i < slots {
            let due = start + schedule.offset(i);
            if due > now {
                break;
            }
            match permits.clone().try_acquire_owned() {
                Ok(permit) => {
                    let work = send(i, due);
                    tasks.spawn_on(
                        async move {
                            work.await;
                            drop(permit);
                        },
                        runtime,
                    );
                }
                Err(_) => overflow(i, due),
            }
            i += 1;
        }
        while tasks.try_join_next().is_some() {}
    }
    tasks
}

/// Waits for every task of `set`, or aborts them at `hard`.
async fn drain_set(mut set: JoinSet<()>, hard: &CancellationToken) -> Ended {
    tokio::select! {
        () = async { while set.join_next().await.is_some() {} } => Ended::default(),
        () = hard.cancelled() => {
            let abandoned = set.len() as u64;
            set.abort_all();
            Ended { abandoned, deadline: true }
        }
    }
}

async fn drain(set: JoinSet<()>, hard: &CancellationToken, ctx: &Ctx) -> Ended {
    let ended = drain_set(set, hard).await;
    Ended {
        abandoned: if ended.deadline {
            ctx.live.in_flight.load(Ordering::Relaxed)
        } else {
            0
        },
        ..ended
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn schedule(rate: f64, secs: f64, max_in_flight: usize) -> Schedule {
        Schedule {
            rate,
            limit: Limit {
                duration: Duration::from_secs_f64(secs),
                requests: None,
            },
            max_in_flight,
        }
    }

    /// Latencies from the scheduled time, and when each request was actually sent (after the start).
    #[derive(Default)]
    struct Seen {
        latency: Mutex<Vec<Duration>>,
        sent_at: Mutex<Vec<Duration>>,
        overflow: AtomicU64,
    }

    /// Runs `schedule` against a responder that takes `respond(slot)` to answer.
    async fn run(
        schedule: Schedule,
        respond: impl Fn(u64) -> Duration + Send + 'static,
        block_scheduler: Option<(u64, Duration)>,
    ) -> Arc<Seen> {
        let seen = Arc::new(Seen::default());
        let start = Instant::now();
        let sender = seen.clone();
        let send = move |slot: u64, due: Instant| {
            let seen = sender.clone();
            seen.sent_at.lock().unwrap().push(start.elapsed());
            if let Some((at, d)) = block_scheduler {
                if slot == at {
                    std::thread::sleep(d); // the scheduler's own thread stalls
                }
            }
            let took = respond(slot);
            async move {
                tokio::time::sleep(took).await;
                seen.latency.lock().unwrap().push(due.elapsed());
            }
        };
        let counter = seen.clone();
        let overflow = move |_: u64, _: Instant| {
            counter.overflow.fetch_add(1, Ordering::Relaxed);
        };
        let hard = CancellationToken::new();
        let ended = tokio::time::timeout(
            Duration::from_secs(20),
            open_loop(schedule, hard, send, overflow),
        )
        .await
        .expect("the schedule ends");
        assert_eq!(ended, Ended::default());
        seen
    }

    #[test]
    fn slots_and_offsets() {
        let s = schedule(200.0, 1.5, 10);
        assert_eq!(s.slots(), 300);
        assert_eq!(s.offset(0), Duration::ZERO);
        assert_eq!(s.offset(100), Duration::from_millis(500));
        let mut capped = s;
        capped.limit.requests = Some(42);
        assert_eq!(capped.slots(), 42);
        assert_eq!(schedule(0.5, 10.0, 1).offset(3), Duration::from_secs(6));
    }

    #[test]
    fn budget_is_exact() {
        let b = Budget::new(Some(3));
        assert_eq!(
            (b.take(), b.take(), b.take(), b.take()),
            (Some(0), Some(1), Some(2), None)
        );
        assert_eq!(Budget::new(None).take(), Some(0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_responses_show_as_latency_not_as_a_lower_rate() {
        // 100/s for 1 s against a responder that takes 300 ms: a closed loop of one client would send
        // about 4 requests; the open loop sends all 100 on time, each with ≥ 300 ms latency.
        let seen = run(
            schedule(100.0, 1.0, 1000),
            |_| Duration::from_millis(300),
            None,
        )
        .await;
        let latency = seen.latency.lock().unwrap();
        let sent_at = seen.sent_at.lock().unwrap();
        assert_eq!(latency.len(), 100);
        assert_eq!(seen.overflow.load(Ordering::Relaxed), 0);
        assert!(
            latency.iter().all(|l| *l >= Duration::from_millis(300)),
            "{latency:?}"
        );
        // Sent on schedule: the last one near 0.99 s, not seconds later.
        let last = *sent_at.iter().max().unwrap();
        assert!(
            last >= Duration::from_millis(950) && last < Duration::from_millis(1300),
            "{last:?}"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_stalled_scheduler_is_charged_to_latency() {
        // The scheduler's thread stalls 300 ms at slot 10 (t = 100 ms). Slots 11..≈40 fall due meanwhile:
        // they go out in a burst when it wakes, and their latency counts from when they were due.
        let seen = run(
            schedule(100.0, 0.8, 1000),
            |_| Duration::from_millis(1),
            Some((10, Duration::from_millis(300))),
        )
        .await;
        let latency = seen.latency.lock().unwrap();
        assert_eq!(latency.len(), 80, "every slot is still sent");
        let delayed = latency
            .iter()
            .filter(|l| **l >= Duration::from_millis(100))
            .count();
        assert!(delayed >= 20, "{delayed} late requests: {latency:?}");
        let worst = latency.iter().max().unwrap();
        assert!(*worst >= Duration::from_millis(280), "{worst:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_flight_is_bounded_and_overflow_counted() {
        // At most 5 in flight, each taking 400 ms, 100/s for 0.5 s: 5 are sent at first, the slots due
        // before the first answer overflow; none waits in a queue.
        let seen = run(
            schedule(100.0, 0.5, 5),
            |_| Duration::from_millis(400),
            None,
        )
        .await;
        let sent = seen.latency.lock().unwrap().len() as u64;
        let overflow = seen.overflow.load(Ordering::Relaxed);
        assert_eq!(sent + overflow, 50);
        assert!((5..=15).contains(&sent), "sent {sent}");
        assert!(overflow >= 35, "overflow {overflow}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_hard_deadline_cuts_off() {
        let hard = CancellationToken::new();
        let cut = hard.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cut.cancel();
        });
        let started = Instant::now();
        let ended = open_loop(
            schedule(50.0, 60.0, 100),
            hard,
            |_, _| tokio::time::sleep(Duration::from_secs(60)),
            |_, _| {},
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(ended.deadline && ended.abandoned >= 5, "{ended:?}");
    }
}
