//! Parsers of the Linux `/proc` texts the overload monitor samples (`/proc/stat`,
//! `/proc/self/stat`, a thread's `status`), and the utilisation between two samples.
//! Pure: the text is passed in; none of them panics, whatever the text.

use std::time::Duration;

/// Cumulative CPU time counters from the aggregate `cpu` line of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// All jiffies (user, nice, system, idle, iowait, irq, softirq, steal).
    pub total: u64,
    /// Idle and iowait jiffies.
    pub idle: u64,
}

/// Parses the first (`cpu `) line of `/proc/stat`; `None` when it is missing or
/// malformed. Never panics, whatever the text.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().next()?;
    let mut fields = line.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    parse_cpu_fields(fields)
}

/// The `cpuN` lines of `/proc/stat` for the given CPUs, summed: the utilisation of
/// the cores a node is pinned to. `None` when none of them is listed or a listed one
/// is malformed. Never panics, whatever the text.
pub fn parse_proc_stat_cpus(text: &str, cpus: &[usize]) -> Option<CpuTimes> {
    let mut sum: Option<CpuTimes> = None;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(n) = fields.next().and_then(|name| name.strip_prefix("cpu")) else {
            continue;
        };
        if !n.parse::<usize>().is_ok_and(|n| cpus.contains(&n)) {
            continue;
        }
        let times = parse_cpu_fields(fields)?;
        let acc = sum.get_or_insert_with(CpuTimes::default);
        acc.total = acc.total.checked_add(times.total)?;
        acc.idle = acc.idle.checked_add(times.idle)?;
    }
    sum
}

fn parse_cpu_fields<'a>(fields: impl Iterator<Item = &'a str>) -> Option<CpuTimes> {
    // user nice system idle iowait irq softirq steal; guest time is already in user.
    let mut values = [0u64; 8];
    let mut count = 0;
    for (slot, field) in values.iter_mut().zip(fields) {
        *slot = field.parse().ok()?;
        count += 1;
    }
    if count < 4 {
        return None;
    }
    let total = values.iter().try_fold(0u64, |acc, v| acc.checked_add(*v))?;
    let idle = values[3].checked_add(values[4])?;
    Some(CpuTimes { total, idle })
}

/// The CPUs a thread may run on, from the `Cpus_allowed_list:` line of its
/// `/proc/.../status` (e.g. `0-3,8`); `None` when missing or malformed. Never panics,
/// whatever the text.
pub fn parse_cpus_allowed(status: &str) -> Option<Vec<usize>> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let n: usize = part.trim().parse().ok()?;
                (n, n)
            }
        };
        if last < first || last - first > 65_536 {
            return None;
        }
        cpus.extend(first..=last);
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// Utilisation between two samples, in 0..=1; `None` when no time passed (or the
/// counters went backwards).
pub fn utilisation(before: CpuTimes, after: CpuTimes) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    let idle = after.idle.checked_sub(before.idle)?;
    if total == 0 {
        return None;
    }
    let busy = total.saturating_sub(idle);
    Some((busy as f64 / total as f64).clamp(0.0, 1.0))
}

/// Clock ticks per second of `/proc` CPU counters (`USER_HZ`): 100 on every Linux ABI
/// this server targets (the kernel exports it as a constant to user space).
pub const USER_HZ: f64 = 100.0;

/// The CPU time (user + system, all threads, in clock ticks) of a process from the
/// text of its `/proc/<pid>/stat`; `None` when malformed. The command name (field 2)
/// may contain spaces and parentheses, so fields are counted after its last `)`.
/// Never panics, whatever the text.
pub fn parse_self_stat(text: &str) -> Option<u64> {
    let (_, rest) = text.rsplit_once(')')?;
    // After the name: state(3) ppid(4) ... utime(14) stime(15), so 11 and 12 here.
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    utime.checked_add(stime)
}

/// This process's CPU utilisation between two readings of its CPU ticks taken
/// `elapsed` apart, as a share of `cores` (0..=1); `None` when no time passed or the
/// counter went backwards.
pub fn process_utilisation(
    before: u64,
    after: u64,
    elapsed: Duration,
    cores: usize,
) -> Option<f64> {
    let ticks = after.checked_sub(before)?;
    let wall = elapsed.as_secs_f64() * cores.max(1) as f64;
    if wall <= 0.0 {
        return None;
    }
    Some((ticks as f64 / USER_HZ / wall).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pinned_cpus_are_read_from_their_own_lines() {
        let stat =
            "cpu  30 0 30 140 0 0 0 0\ncpu0 10 0 10 80 0 0 0 0\ncpu1 20 0 20 60 0 0 0 0\nintr 5\n";
        assert_eq!(
            parse_proc_stat_cpus(stat, &[1]),
            Some(CpuTimes {
                total: 100,
                idle: 60
            })
        );
        assert_eq!(
            parse_proc_stat_cpus(stat, &[0, 1]),
            Some(CpuTimes {
                total: 200,
                idle: 140
            })
        );
        assert_eq!(parse_proc_stat_cpus(stat, &[7]), None);
        let status = "Name:\tnode\nCpus_allowed:\t3\nCpus_allowed_list:\t0-2,5\n";
        assert_eq!(parse_cpus_allowed(status), Some(vec![0, 1, 2, 5]));
        assert_eq!(parse_cpus_allowed("Cpus_allowed_list:\t3-1\n"), None);
        assert_eq!(parse_cpus_allowed("Name: x\n"), None);
    }

    #[test]
    fn parses_a_real_line_and_computes_utilisation() {
        let a = parse_proc_stat("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n");
        assert_eq!(
            a,
            Some(CpuTimes {
                total: 1000,
                idle: 800
            })
        );
        let b = parse_proc_stat("cpu  400 0 200 900 100 0 0 0 0 0\n");
        assert_eq!(
            b,
            Some(CpuTimes {
                total: 1600,
                idle: 1000
            })
        );
        let u = utilisation(a.unwrap_or_default(), b.unwrap_or_default());
        assert_eq!(u, Some(400.0 / 600.0));
        assert_eq!(
            utilisation(b.unwrap_or_default(), a.unwrap_or_default()),
            None
        );
        assert_eq!(parse_proc_stat("cpu0 1 2 3 4"), None);
        assert_eq!(parse_proc_stat("cpu 1 2 x 4"), None);
        assert_eq!(parse_proc_stat("cpu 1 2"), None);
        assert_eq!(parse_proc_stat(""), None);
        let host = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        if !host.is_empty() {
            assert!(parse_proc_stat(&host).is_some(), "this host's /proc/stat");
        }
    }

    #[test]
    fn parses_self_stat_with_a_hostile_name_and_normalises_by_cores() {
        let line =
            "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 3190 0 0 0 150 50 0 0 20 0 9 0 100 1000 10";
        assert_eq!(parse_self_stat(line), Some(200));
        assert_eq!(parse_self_stat("4242 (x) S 1 2"), None);
        assert_eq!(parse_self_stat("no paren"), None);
        // 100 ticks = 1 s of CPU over 1 s on 2 cores: half the machine.
        let u = process_utilisation(0, 100, Duration::from_secs(1), 2);
        assert_eq!(u, Some(0.5));
        assert_eq!(process_utilisation(100, 0, Duration::from_secs(1), 2), None);
        assert_eq!(process_utilisation(0, 100, Duration::ZERO, 2), None);
        assert_eq!(
            process_utilisation(0, 10_000, Duration::from_secs(1), 1),
            Some(1.0)
        );
        let own = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        if !own.is_empty() {
            assert!(
                parse_self_stat(&own).is_some(),
                "this process's /proc/self/stat"
            );
        }
    }

    proptest! {
        #[test]
        fn self_stat_parser_never_panics(text in ".{0,300}") {
            let _ = parse_self_stat(&text);
            let _ = parse_cpus_allowed(&text);
            let _ = parse_proc_stat_cpus(&text, &[0, 1]);
        }

        #[test]
        fn parser_never_panics_and_idle_fits_total(text in ".{0,200}", nums in proptest::collection::vec(any::<u64>(), 0..12)) {
            let _ = parse_proc_stat(&text);
            let line = format!("cpu {}", nums.iter().map(u64::to_string).collect::<Vec<_>>().join(" "));
            if let Some(t) = parse_proc_stat(&line) {
                prop_assert!(t.idle <= t.total);
            }
        }
    }
}
