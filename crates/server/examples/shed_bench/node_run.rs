//! One measured run: a node on its own pinned core, the generator on the other, the
//! viewer probe beside the node, and what the node's core and threads did meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use server::shed::ShedSettings;
use shed::OverloadLevel;

use crate::shed_load::{
    drive, node_cpu_time, pin_current_thread, report, start_node_on, thread_cpu_time, ClassReport,
    Plan,
};

/// CPUs for the node and the generator, when there are two to separate.
/// Read once, before any thread is pinned (a pinned thread sees one CPU).
pub(crate) fn cpus() -> Option<(usize, usize)> {
    static CPUS: std::sync::OnceLock<Option<(usize, usize)>> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        (n >= 2).then_some((0, 1))
    })
}

/// The overload level the node used during a run, sampled every 100 ms.
#[derive(Debug, Default)]
pub(crate) struct LevelTrace {
    /// Mean busy share of the node's runtime worker (is the node the bottleneck?).
    pub(crate) busy: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) mean: f64,
    pub(crate) mean_threshold: f64,
    /// Connections paused for ignoring the back-pressure answer during the run.
    pub(crate) pauses: u64,
    /// Busy share of the node's CPU over the run (its worker, the lane, the probe
    /// and the kernel's work there), from `/proc/stat`; `None` when not pinned.
    pub(crate) cpu: Option<f64>,
    /// Busy shares of the node's CPU taken by its runtime worker and by its priority
    /// lane over the run.
    pub(crate) worker: f64,
    pub(crate) lane: f64,
}

/// The counters of one CPU's line (`cpuN`) of `/proc/stat`.
pub(crate) fn cpu_times(cpu: usize) -> Option<server::shed::overload::CpuTimes> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&format!("cpu{cpu}")))?;
    // The parser reads the aggregate line: give it this one under that name.
    let fields = line.split_once(' ')?.1;
    server::shed::overload::parse_proc_stat(&format!("cpu {fields}"))
}

/// The name of the priority lane's thread.
pub(crate) const LANE_THREAD: &str = "http-lane";

pub(crate) fn run(
    never_shed: bool,
    settings: &ShedSettings,
    segment_bytes: usize,
    plan: &Plan,
    probe: Option<&Plan>,
) -> (Vec<ClassReport>, LevelTrace, Option<ClassReport>) {
    let pins = cpus();
    let node = start_node_on(settings, 1, segment_bytes, pins.map(|(node, _)| node));
    if never_shed {
        // The operator override: the layer, the lane and the pause all run, the
        // level stays 0.
        node.shedder.levels().force_level(Some(OverloadLevel::ZERO));
    }
    let generator_cpu = pins.map(|(_, generator)| generator);
    // One thread: the generator's batches (HTTP/1.1 pipelining) and its reading of
    // answers without copying their bodies keep it cheaper per request than the node.
    let generator = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("generator runtime");
    // The viewer probe: a thread of its own on the node's CPU, above the node and its
    // lane (SCHED_FIFO 2 where allowed), so neither the flood's backlog nor the node's
    // work delays its own requests or its reading of answers: what it measures is how
    // long the node takes to answer. (On the other CPU, waking an idle virtual CPU
    // added milliseconds of noise to the unloaded figures.)
    // The probe runs as long as the plan, so both count over the same window.
    let probe = probe.cloned().map(|probe| Plan {
        duration: plan.duration,
        ..probe
    });
    let probe = probe.map(|probe| {
        let addr = node.addr;
        let node_cpu = pins.map(|(node, _)| node);
        std::thread::spawn(move || {
            if let Some(cpu) = node_cpu {
                pin_current_thread(cpu);
            }
            raise_probe_priority();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("probe runtime");
            let samples = runtime.block_on(drive(addr, &probe));
            report(&samples, 1, Duration::from_secs(1), probe.duration)
                .pop()
                .expect("one class")
        })
    });
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let shedder = Arc::clone(&node.shedder);
        let done = Arc::clone(&done);
        let skip = 10;
        let trace = std::env::var_os("SHED_BENCH_TRACE").is_some();
        std::thread::spawn(move || {
            let mut levels = Vec::new();
            let mut k = 0;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                k += 1;
                if k > skip {
                    let mut text = String::new();
                    shedder.render_metrics(&mut text);
                    let gauge = |name: &str| {
                        text.lines()
                            .find_map(|l| l.strip_prefix(name))
                            .and_then(|v| v.trim().parse::<f64>().ok())
                            .unwrap_or(0.0)
                    };
                    let busy = gauge("brdyun_shed_cpu_utilisation ");
                    if trace {
                        println!(
                            "    trace {:>5.1} s: level {:.4} (cut {:>6.3}) threshold {:>2} busy {:.2} queue delay {:>6.2} ms",
                            k as f64 / 10.0,
                            shedder.levels().level().get(),
                            99.0 * shedder.levels().level().get().powi(3),
                            shedder.levels().threshold().get(),
                            busy,
                            gauge("brdyun_shed_queue_delay_seconds ") * 1e3
                        );
                    }
                    levels.push((
                        shedder.levels().level().get(),
                        f64::from(shedder.levels().threshold().get()),
                        busy,
                    ));
                }
            }
            levels
        })
    };
    if let Some(cpu) = generator_cpu {
        pin_current_thread(cpu);
    }
    let cpu_before = pins.and_then(|(node, _)| cpu_times(node));
    let threads_before = (node_cpu_time(), thread_cpu_time(LANE_THREAD));
    let started = std::time::Instant::now();
    let samples = generator.block_on(async {
        // The generator never sleeps: on loopback the node's CPU delivers each answer
        // into the generator's socket, and waking a generator asleep in `epoll_wait`
        // takes a cross-CPU interrupt (on a virtual machine, an exit) that the node
        // pays. How often the generator sleeps depends on how much the node sends it,
        // so without this the node's cost per answer would change with its shedding.
        let spinner = tokio::spawn(async {
            loop {
                tokio::task::yield_now().await;
            }
        });
        let samples = drive(node.addr, plan).await;
        spinner.abort();
        samples
    });
    let cpu_after = pins.and_then(|(node, _)| cpu_times(node));
    let elapsed = started.elapsed().as_secs_f64();
    let worker = (node_cpu_time() - threads_before.0).as_secs_f64() / elapsed;
    let lane = (thread_cpu_time(LANE_THREAD) - threads_before.1).as_secs_f64() / elapsed;
    let probe = probe.map(|p| p.join().expect("probe"));
    done.store(true, Ordering::Relaxed);
    let levels = sampler.join().expect("level sampler");
    let pauses = node.shedder.pauses().connection_pauses();
    drop(node);
    let n = levels.len().max(1) as f64;
    let trace = LevelTrace {
        busy: levels.iter().map(|l| l.2).sum::<f64>() / n,
        min: levels.iter().map(|l| l.0).fold(f64::INFINITY, f64::min),
        max: levels.iter().map(|l| l.0).fold(0.0, f64::max),
        mean: levels.iter().map(|l| l.0).sum::<f64>() / n,
        mean_threshold: levels.iter().map(|l| l.1).sum::<f64>() / n,
        pauses,
        cpu: cpu_before
            .zip(cpu_after)
            .and_then(|(b, a)| server::shed::overload::utilisation(b, a)),
        worker,
        lane,
    };
    // Skip the first second (connections opening, overload level rising).
    let reports = report(
        &samples,
        plan.classes.len(),
        Duration::from_secs(1),
        plan.duration,
    );
    (reports, trace, probe)
}

/// Puts the calling thread under `SCHED_FIFO` 2, above the generator and above a
/// `"realtime"` priority lane (1); leaves it as it is where that is not allowed.
#[allow(unsafe_code)]
pub(crate) fn raise_probe_priority() {
    let param = libc::sched_param { sched_priority: 2 };
    // SAFETY: sched_setscheduler reads `param` and changes only the calling thread.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}
