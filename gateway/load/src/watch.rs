//! Watched processes (`--watch-pid PID`, repeatable) and the leak check of a soak run: once a second (the
//! `timeline` sampler calls [`Watch::sample`]) each process's resident memory, CPU, open file descriptors
//! and threads are read from `/proc/PID` (Linux), and after the warm-up (`--warm-up`) its RSS samples feed a
//! least-squares line whose slope, compared with `--leak-slope`, is the verdict (`ok`, `leak`, or
//! `inconclusive` with too few samples); `--fail-on-leak` turns anything but `ok` into a failed run.
//!
//! It must not keep the samples themselves (the fit is a running sum, the samples go to the bounded
//! timeline), nor watch more than [`MAX_WATCHED`] processes, nor signal or otherwise touch them: it only
//! reads `/proc`.

use std::time::Duration;

use super::LoadError;

/// Most processes one run watches.
pub(crate) const MAX_WATCHED: usize = 16;
/// Fewest samples after the warm-up for a verdict.
pub(crate) const MIN_SAMPLES: u64 = 5;
/// Clock ticks per second of `/proc/PID/stat`'s CPU times (100 on every Linux).
const TICKS_PER_S: f64 = 100.0;

/// `1MiB/min`, `512KiB/min`, `10MB/h`, `100kB/s`, `4096B/s`: bytes per minute.
pub fn parse_slope(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (size, per) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not a slope (e.g. 1MiB/min)"))?;
    let size = size.trim();
    let split = size
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(size.len());
    let (number, unit) = size.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a slope (e.g. 1MiB/min)"))?;
    let bytes = value
        * match unit.trim() {
            "" | "B" => 1.0,
            "kB" | "KB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            other => {
                return Err(format!(
                    "unknown size unit {other:?} in {s:?} (B, kB, MB, GB, KiB, MiB, GiB)"
                ));
            }
        };
    let per_min = match per.trim() {
        "s" | "sec" => bytes * 60.0,
        "m" | "min" => bytes,
        "h" => bytes / 60.0,
        other => {
            return Err(format!(
                "unknown period {other:?} in {s:?} (use /s, /min or /h)"
            ));
        }
    };
    if !(per_min.is_finite() && per_min >= 0.0) {
        return Err(format!("{s:?}: the slope must be a finite size per period"));
    }
    Ok(per_min)
}

/// One reading of one watched process.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ProcSample {
    /// The process.
    pub pid: u32,
    /// Resident memory (`VmRSS`).
    pub rss_bytes: u64,
    /// CPU used since the previous reading, in cores (CPU seconds per second).
    pub cpu_cores: f64,
    /// Open file descriptors (entries of `/proc/PID/fd`).
    pub fds: u64,
    /// Threads.
    pub threads: u64,
}

/// What the leak check concluded about one process, and the figures behind it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ProcReport {
    pub pid: u32,
    /// Its name (`/proc/PID/comm`).
    pub name: String,
    /// Readings taken.
    pub samples: u64,
    /// … of them after the warm-up (those the slope is fitted to).
    pub samples_after_warm_up: u64,
    pub rss_first_bytes: u64,
    pub rss_last_bytes: u64,
    pub rss_max_bytes: u64,
    pub fds_max: u64,
    pub threads_max: u64,
    /// CPU used while watched, in CPU seconds.
    pub cpu_s: f64,
    /// Whether it ended during the run.
    pub exited: bool,
    /// Least-squares slope of RSS over time after the warm-up, bytes per minute.
    pub rss_slope_bytes_per_min: Option<f64>,
    /// `ok`, `leak` or `inconclusive`.
    pub verdict: String,
}

/// The leak check of the run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct WatchReport {
    /// `--leak-slope`, bytes per minute.
    pub leak_slope_bytes_per_min: f64,
    /// `--warm-up`, seconds.
    pub warm_up_s: f64,
    /// Fewest samples after the warm-up for a verdict.
    pub min_samples: u64,
    /// Each watched process.
    pub processes: Vec<ProcReport>,
    /// `leak` if any process leaked, else `inconclusive` if any had too few samples, else `ok`.
    pub verdict: String,
}

impl WatchReport {
    /// Why `--fail-on-leak` fails the run, or `None` when the verdict is `ok`.
    pub fn failure(&self) -> Option<String> {
        let limit = mib(self.leak_slope_bytes_per_min);
        let why: Vec<String> = self
            .processes
            .iter()
            .filter(|p| p.verdict != "ok")
            .map(|p| match p.rss_slope_bytes_per_min {
                Some(s) if p.verdict == "leak" => format!(
                    "pid {} ({}) RSS grew {:.3} MiB/min after the warm-up, above {limit:.3} MiB/min",
                    p.pid,
                    p.name,
                    mib(s)
                ),
                _ => format!(
                    "pid {} ({}): {} samples after the warm-up of {} s, {} needed (inconclusive)",
                    p.pid, p.name, p.samples_after_warm_up, self.warm_up_s, self.min_samples
                ),
            })
            .collect();
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The table's lines about the watched processes.
    pub(crate) fn table(&self) -> String {
        let mut t = String::new();
        for p in &self.processes {
            let slope = p
                .rss_slope_bytes_per_min
                .map_or("no slope".to_owned(), |s| {
                    format!("slope {:+.3} MiB/min", mib(s))
                });
            t.push_str(&format!(
                "watched     pid {} {}: RSS {:.1} → {:.1} MiB (max {:.1}), {slope} over {} samples after {} s; CPU {:.2} s; fds max {}; threads max {}{}: {}\n",
                p.pid,
                p.name,
                mib(p.rss_first_bytes as f64),
                mib(p.rss_last_bytes as f64),
                mib(p.rss_max_bytes as f64),
                p.samples_after_warm_up,
                self.warm_up_s,
                p.cpu_s,
                p.fds_max,
                p.threads_max,
                if p.exited { "; exited" } else { "" },
                p.verdict
            ));
        }
        t.push_str(&format!(
            "leak check  {} (RSS slope limit {:.3} MiB/min after {} s of warm-up, at least {} samples)\n",
            self.verdict,
            mib(self.leak_slope_bytes_per_min),
            self.warm_up_s,
            self.min_samples
        ));
        t
    }
}

fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

/// A least-squares line fitted as samples come (Welford's running means and co-moments: no samples kept,
/// no loss of precision with large offsets).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fit {
    n: u64,
    mean_x: f64,
    mean_y: f64,
    c_xy: f64,
    m2_x: f64,
}

impl Fit {
    pub(crate) fn add(&mut self, x: f64, y: f64) {
        self.n += 1;
        let dx = x - self.mean_x;
        self.mean_x += dx / self.n as f64;
        self.mean_y += (y - self.mean_y) / self.n as f64;
        self.c_xy += dx * (y - self.mean_y);
        self.m2_x += dx * (x - self.mean_x);
    }

    /// dy/dx, once there are two distinct x.
    pub(crate) fn slope(&self) -> Option<f64> {
        (self.n >= 2 && self.m2_x > 0.0).then(|| self.c_xy / self.m2_x)
    }
}

/// The leak check's rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rule {
    pub(crate) slope_bytes_per_min: f64,
    pub(crate) warm_up: Duration,
}

/// One watched process, as followed so far.
#[derive(Debug)]
struct Followed {
    pid: u32,
    /// CPU ticks and the time of the previous reading.
    last_cpu: Option<(f64, u64)>,
    fit: Fit,
    first_ticks: Option<u64>,
    report: ProcReport,
}

/// The watched processes.
#[derive(Debug)]
pub(crate) struct Watch {
    rule: Rule,
    followed: Vec<Followed>,
}

impl Watch {
    /// Checks that every pid names a readable process (Linux `/proc`).
    pub(crate) fn new(pids: &[u32], rule: Rule) -> Result<Watch, LoadError> {
        if pids.len() > MAX_WATCHED {
            return Err(LoadError::InvalidArgs(format!(
                "--watch-pid is given {} times; at most {MAX_WATCHED}",
                pids.len()
            )));
        }
        let mut followed = Vec::new();
        for &pid in pids {
            if followed.iter().any(|f: &Followed| f.pid == pid) {
                continue;
            }
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map_err(|e| {
                    LoadError::InvalidArgs(format!(
                        "--watch-pid {pid}: cannot read /proc/{pid}: {e}"
                    ))
                })?
                .trim_end()
                .to_owned();
            followed.push(Followed {
                pid,
                last_cpu: None,
                fit: Fit::default(),
                first_ticks: None,
                report: ProcReport {
                    pid,
                    name,
                    ..ProcReport::default()
                },
            });
        }
        Ok(Watch { rule, followed })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.followed.is_empty()
    }

    pub(crate) fn pids(&self) -> Vec<u32> {
        self.followed.iter().map(|f| f.pid).collect()
    }

    /// Takes each process's CPU time at the load's start, so that the first sample's CPU is that of its
    /// first second.
    pub(crate) fn prime(&mut self) {
        for f in &mut self.followed {
            f.last_cpu = read_proc(f.pid).map(|r| (0.0, r.ticks));
            f.first_ticks = f.last_cpu.map(|(_, ticks)| ticks);
        }
    }

    /// Reads every process still there, `t` seconds after the load started.
    pub(crate) fn sample(&mut self, t: f64) -> Vec<ProcSample> {
        let warm_up = self.rule.warm_up.as_secs_f64();
        let mut out = Vec::new();
        for f in self.followed.iter_mut().filter(|f| !f.report.exited) {
            let Some(read) = read_proc(f.pid) else {
                f.report.exited = true;
                continue;
            };
            let cpu_cores = match f.last_cpu {
                Some((t0, ticks0)) if t > t0 => {
                    read.ticks.saturating_sub(ticks0) as f64 / TICKS_PER_S / (t - t0)
                }
                _ => 0.0,
            };
            f.last_cpu = Some((t, read.ticks));
            let first = *f.first_ticks.get_or_insert(read.ticks);
            let r = &mut f.report;
            if r.samples == 0 {
                r.rss_first_bytes = read.rss_bytes;
            }
            r.samples += 1;
            r.rss_last_bytes = read.rss_bytes;
            r.rss_max_bytes = r.rss_max_bytes.max(read.rss_bytes);
            r.fds_max = r.fds_max.max(read.fds);
            r.threads_max = r.threads_max.max(read.threads);
            r.cpu_s = read.ticks.saturating_sub(first) as f64 / TICKS_PER_S;
            if t >= warm_up {
                r.samples_after_warm_up += 1;
                f.fit.add(t / 60.0, read.rss_bytes as f64);
            }
            out.push(ProcSample {
                pid: f.pid,
                rss_bytes: read.rss_bytes,
                cpu_cores: round3(cpu_cores),
                fds: read.fds,
                threads: read.threads,
            });
        }
        out
    }

    /// The verdicts.
    pub(crate) fn report(&self) -> WatchReport {
        let processes: Vec<ProcReport> = self
            .followed
            .iter()
            .map(|f| {
                let mut r = f.report.clone();
                r.rss_slope_bytes_per_min = f.fit.slope().map(|s| s.round());
                r.verdict = verdict(
                    r.samples_after_warm_up,
                    r.rss_slope_bytes_per_min,
                    self.rule,
                );
                r
            })
            .collect();
        let any = |v: &str| processes.iter().any(|p| p.verdict == v);
        let verdict = if any("leak") {
            "leak"
        } else if any("inconclusive") {
            "inconclusive"
        } else {
            "ok"
        };
        WatchReport {
            leak_slope_bytes_per_min: self.rule.slope_bytes_per_min,
            warm_up_s: self.rule.warm_up.as_secs_f64(),
            min_samples: MIN_SAMPLES,
            processes,
            verdict: verdict.to_owned(),
        }
    }
}

/// `ok`, `leak` or `inconclusive`.
pub(crate) fn verdict(samples: u64, slope: Option<f64>, rule: Rule) -> String {
    match slope {
        Some(s) if samples >= MIN_SAMPLES => {
            if s > rule.slope_bytes_per_min {
                "leak"
            } else {
                "ok"
            }
        }
        _ => "inconclusive",
    }
    .to_owned()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// What `/proc/PID` says now.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Read {
    rss_bytes: u64,
    threads: u64,
    ticks: u64,
    fds: u64,
}

fn read_proc(pid: u32) -> Option<Read> {
    let dir = format!("/proc/{pid}");
    let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    let (rss_bytes, threads) = parse_status(&status)?;
    let ticks = parse_stat_ticks(&stat)?;
    // A zombie's /proc entry stays until it is reaped: it has no memory and no fd directory.
    if stat_state(&stat) == Some('Z') {
        return None;
    }
    let fds = std::fs::read_dir(format!("{dir}/fd")).map_or(0, |d| d.count() as u64);
    Some(Read {
        rss_bytes,
        threads,
        ticks,
        fds,
    })
}

/// `VmRSS` (bytes; 0 when absent, as for a kernel thread) and `Threads` of `/proc/PID/status`.
fn parse_status(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    let threads = field("Threads:")?;
    let rss = field("VmRSS:").unwrap_or(0) * 1024;
    Some((rss, threads))
}

/// The process's state letter in `/proc/PID/stat`.
fn stat_state(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// utime + stime (clock ticks) of `/proc/PID/stat`.
fn parse_stat_ticks(stat: &str) -> Option<u64> {
    // The name field may hold spaces and parentheses: fields are counted after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests;
