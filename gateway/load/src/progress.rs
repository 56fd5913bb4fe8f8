//! What a run shows while it runs: live counters, a progress line on standard error when it is a terminal
//! (rewritten in place once a second, erased at the end), and the CPU time the generator's own threads
//! use (Linux: `/proc/self/task/*/stat` of the threads named `mcpgw-load*`), so that a report can say
//! whether the generator, rather than the target, was the limit.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// Name (prefix) of every thread of the generator.
pub(crate) const THREAD_NAME: &str = "mcpgw-load";

/// Counters the sessions bump and the progress line reads.
#[derive(Debug, Default)]
pub(crate) struct Live {
    /// Measured requests completed (answered, failed or overflowed).
    pub(crate) completed: AtomicU64,
    /// … of which errors.
    pub(crate) errors: AtomicU64,
    /// Measured requests in flight.
    pub(crate) in_flight: AtomicU64,
}

/// This process's resident memory now and at its peak (`VmRSS`, `VmHWM` of `/proc/self/status`), in
/// bytes; `None` where there is no such file.
pub(crate) fn resident() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    resident_of(&status)
}

fn resident_of(status: &str) -> Option<(u64, u64)> {
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse::<u64>()
            .ok()
    };
    Some((kib("VmRSS:")? * 1024, kib("VmHWM:")? * 1024))
}

/// Whether a progress line should be drawn (standard error is a terminal).
pub(crate) fn wanted() -> bool {
    std::io::stderr().is_terminal()
}

/// Redraws the progress line every second until `done`, then erases it.
pub(crate) async fn show(
    live: &Live,
    start: Instant,
    duration: Duration,
    requests: Option<u64>,
    done: CancellationToken,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut last = (Instant::now(), 0u64);
    loop {
        tokio::select! {
            () = done.cancelled() => break,
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        let completed = live.completed.load(Ordering::Relaxed);
        let rate = (completed - last.1.min(completed)) as f64
            / now.duration_since(last.0).as_secs_f64().max(1e-3);
        last = (now, completed);
        let line = line(
            start.elapsed(),
            duration,
            completed,
            requests,
            rate,
            live.errors.load(Ordering::Relaxed),
            live.in_flight.load(Ordering::Relaxed),
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
}

/// The text of the progress line.
fn line(
    elapsed: Duration,
    duration: Duration,
    completed: u64,
    requests: Option<u64>,
    rate: f64,
    errors: u64,
    in_flight: u64,
) -> String {
    let count = match requests {
        Some(n) => format!("{completed}/{n}"),
        None => completed.to_string(),
    };
    format!(
        "mcpgw load {:>6.1}s/{:.1}s  {count} requests  {rate:.0}/s  errors {errors}  in flight {in_flight}",
        elapsed.as_secs_f64(),
        duration.as_secs_f64(),
    )
}

/// CPU time used so far by the generator's threads and by the process's other threads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Cpu {
    pub(crate) generator: Duration,
    pub(crate) other: Duration,
}

impl Cpu {
    /// Now, or `None` where `/proc` cannot tell (not Linux).
    pub(crate) fn now() -> Option<Cpu> {
        let mut cpu = Cpu::default();
        for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let dir = entry.path();
            let (Ok(stat), Ok(comm)) = (
                std::fs::read_to_string(dir.join("stat")),
                std::fs::read_to_string(dir.join("comm")),
            ) else {
                continue; // the thread ended meanwhile
            };
            let Some(t) = thread_cpu(&stat) else { continue };
            if comm.trim_end().starts_with(THREAD_NAME) {
                cpu.generator += t;
            } else {
                cpu.other += t;
            }
        }
        Some(cpu)
    }

    /// The time used between `earlier` and `self`.
    pub(crate) fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            generator: self.generator.saturating_sub(earlier.generator),
            other: self.other.saturating_sub(earlier.other),
        }
    }
}

/// utime + stime of one `/proc/.../stat` line (clock ticks of 1/100 s, as on every Linux).
fn thread_cpu(stat: &str) -> Option<Duration> {
    // The name field may hold spaces and parentheses: fields are counted after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        let status = "Name:\tmcpgw\nVmHWM:\t  204800 kB\nVmRSS:\t   102400 kB\nThreads:\t4\n";
        assert_eq!(resident_of(status), Some((100 << 20, 200 << 20)));
        assert_eq!(resident_of("Name:\tx\n"), None);
        if cfg!(target_os = "linux") {
            let (rss, peak) = resident().unwrap();
            assert!(rss > 0 && peak >= rss, "{rss} {peak}");
        }
    }

    #[test]
    fn stat_lines() {
        let stat = "1234 (mcpgw-load (x)) S 1 2 3 4 5 6 7 8 9 10 150 25 0 0 20 0 4 0 100 0 0";
        assert_eq!(thread_cpu(stat), Some(Duration::from_millis(1750)));
        assert_eq!(thread_cpu("garbage"), None);
    }

    #[test]
    fn this_process_is_measured() {
        if cfg!(target_os = "linux") {
            // Spin until the process's measured CPU moves by 20 ms: on a busy machine a thread gets only a
            // share of the wall time, so the spin is bounded by wall time (10 s) and not timed.
            let before = Cpu::now().unwrap();
            let mut x = 0u64;
            let spin = Instant::now();
            let mut used = Cpu::now().unwrap().since(before);
            while used.other + used.generator < Duration::from_millis(20)
                && spin.elapsed() < Duration::from_secs(10)
            {
                for _ in 0..100_000 {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                used = Cpu::now().unwrap().since(before);
            }
            assert!(x > 0);
            assert!(
                used.other + used.generator >= Duration::from_millis(20),
                "{used:?} after 10 s of spinning"
            );
        }
    }

    #[test]
    fn progress_text() {
        let l = line(
            Duration::from_millis(3200),
            Duration::from_secs(10),
            120,
            Some(1000),
            40.4,
            2,
            16,
        );
        assert_eq!(
            l,
            "mcpgw load    3.2s/10.0s  120/1000 requests  40/s  errors 2  in flight 16"
        );
    }
}
