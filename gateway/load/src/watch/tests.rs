use super::*;

const MIB: f64 = 1024.0 * 1024.0;

fn rule(mib_per_min: f64, warm_up_s: u64) -> Rule {
    Rule {
        slope_bytes_per_min: mib_per_min * MIB,
        warm_up: Duration::from_secs(warm_up_s),
    }
}

#[test]
fn slopes_parse_to_bytes_per_minute() {
    assert_eq!(parse_slope("1MiB/min"), Ok(MIB));
    assert_eq!(parse_slope("512KiB/min"), Ok(512.0 * 1024.0));
    assert_eq!(parse_slope("60MB/h"), Ok(1e6));
    assert_eq!(parse_slope("1kB/s"), Ok(60_000.0));
    assert_eq!(parse_slope("100/s"), Ok(6000.0));
    assert_eq!(parse_slope("0B/min"), Ok(0.0));
    assert!(parse_slope("1MiB").unwrap_err().contains("not a slope"));
    assert!(
        parse_slope("1XB/min")
            .unwrap_err()
            .contains("unknown size unit")
    );
    assert!(
        parse_slope("1MiB/day")
            .unwrap_err()
            .contains("unknown period")
    );
}

#[test]
fn the_fit_finds_the_slope_of_a_line_with_noise_and_a_large_offset() {
    let mut fit = Fit::default();
    assert_eq!(fit.slope(), None);
    // 1 GiB resident, growing 2 MiB a minute, with ±64 KiB of alternating noise, for two hours.
    for s in 0..7200u32 {
        let noise = if s % 2 == 0 { 65536.0 } else { -65536.0 };
        let y = 1024.0 * MIB + 2.0 * MIB * f64::from(s) / 60.0 + noise;
        fit.add(f64::from(s) / 60.0, y);
    }
    let slope = fit.slope().unwrap();
    assert!((slope - 2.0 * MIB).abs() < 0.001 * MIB, "{slope}");
    let mut flat = Fit::default();
    flat.add(1.0, 5.0);
    assert_eq!(flat.slope(), None, "one x only");
    flat.add(2.0, 5.0);
    assert_eq!(flat.slope(), Some(0.0));
}

#[test]
fn verdicts_compare_the_slope_with_the_limit_once_there_are_enough_samples() {
    let r = rule(1.0, 30);
    assert_eq!(verdict(100, Some(1.5 * MIB), r), "leak");
    assert_eq!(verdict(100, Some(0.5 * MIB), r), "ok");
    assert_eq!(verdict(100, Some(-3.0 * MIB), r), "ok");
    assert_eq!(verdict(MIN_SAMPLES - 1, Some(9.0 * MIB), r), "inconclusive");
    assert_eq!(verdict(100, None, r), "inconclusive");
}

/// The whole check on synthetic samples: a process that grows 3 MiB/min after a warm-up in which it grew
/// much faster (which the check must ignore) leaks against a 1 MiB/min limit and not against 4 MiB/min.
#[test]
fn a_watch_report_judges_only_the_samples_after_the_warm_up() {
    let judge = |limit_mib: f64| {
        let mut f = Followed {
            pid: 7,
            last_cpu: None,
            fit: Fit::default(),
            first_ticks: None,
            report: ProcReport {
                pid: 7,
                name: "target".into(),
                ..ProcReport::default()
            },
        };
        for s in 0..120u32 {
            let t = f64::from(s);
            let rss = if s < 30 {
                t * 10.0 * MIB
            } else {
                300.0 * MIB + (t - 30.0) / 60.0 * 3.0 * MIB
            };
            f.report.samples += 1;
            if s >= 30 {
                f.report.samples_after_warm_up += 1;
                f.fit.add(t / 60.0, rss);
            }
        }
        let w = Watch {
            rule: rule(limit_mib, 30),
            followed: vec![f],
        };
        w.report()
    };
    let leaking = judge(1.0);
    assert_eq!(leaking.verdict, "leak");
    let p = &leaking.processes[0];
    assert_eq!(p.samples_after_warm_up, 90);
    assert!(
        (p.rss_slope_bytes_per_min.unwrap() - 3.0 * MIB).abs() < 1.0,
        "{p:?}"
    );
    let why = leaking.failure().unwrap();
    assert!(
        why.contains("pid 7 (target) RSS grew 3.000 MiB/min"),
        "{why}"
    );
    assert!(leaking.table().contains("leak check  leak"));
    let fine = judge(4.0);
    assert_eq!(fine.verdict, "ok");
    assert_eq!(fine.failure(), None);
}

#[test]
fn proc_files_parse() {
    let status = "Name:\tmcpgw\nUmask:\t0022\nState:\tS (sleeping)\nVmPeak:\t  20000 kB\nVmRSS:\t   12345 kB\nThreads:\t7\n";
    assert_eq!(parse_status(status), Some((12345 * 1024, 7)));
    assert_eq!(parse_status("Name:\tkthreadd\nThreads:\t1\n"), Some((0, 1)));
    assert_eq!(parse_status("garbage"), None);
    let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 100 0 0";
    assert_eq!(parse_stat_ticks(stat), Some(300));
    assert_eq!(stat_state(stat), Some('S'));
    assert_eq!(stat_state("43 (z) Z 1 2"), Some('Z'));
    assert_eq!(parse_stat_ticks("garbage"), None);
}

#[test]
fn this_process_can_be_watched_and_a_missing_one_is_refused() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let me = std::process::id();
    let mut w = Watch::new(&[me, me], rule(1.0, 0)).unwrap();
    assert_eq!(w.pids(), vec![me], "a pid given twice is watched once");
    w.prime();
    // Spin until this process's CPU time has moved on by a clock tick (bounded).
    let before = read_proc(me).unwrap().ticks;
    let spin = std::time::Instant::now();
    let mut x = 0u64;
    while read_proc(me).unwrap().ticks == before && spin.elapsed() < Duration::from_secs(60) {
        for _ in 0..100_000 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
    }
    // The ticks may have moved before the first spin (the loop then never ran): what counts is that they
    // moved, not how long it took.
    std::hint::black_box(x);
    assert_ne!(
        read_proc(me).unwrap().ticks,
        before,
        "this process got no CPU tick in 60 s of spinning"
    );
    let a = w.sample(0.5);
    assert!(a[0].cpu_cores > 0.0, "the first sample has its CPU: {a:?}");
    let b = w.sample(1.0);
    assert_eq!(a.len(), 1);
    assert!(
        b[0].rss_bytes > 0 && b[0].threads >= 1 && b[0].fds >= 1,
        "{b:?}"
    );
    assert_eq!(w.report().processes[0].samples, 2);
    let gone = Watch::new(&[u32::MAX - 1], rule(1.0, 0)).unwrap_err();
    assert!(gone.to_string().contains("--watch-pid"), "{gone}");
    let many: Vec<u32> = (0..=MAX_WATCHED as u32).collect();
    assert!(Watch::new(&many, rule(1.0, 0)).is_err());
}
