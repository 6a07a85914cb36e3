//! Connection locality: which CPU serves a connection.
//!
//! With a [`CpuPlacement`] a node's plain-HTTP serving threads and its priority lane's
//! threads (where every viewer's playback requests are served) run one per CPU, each
//! pinned. Each serving thread's `SO_REUSEPORT` listener carries `SO_INCOMING_CPU`, so
//! the kernel gives a new connection to the listener of the CPU its SYN was processed
//! on — the CPU its packets arrive on (the NIC queue's, or on loopback the client's
//! own) — and the lane takes it on the same CPU, within a fair share of the lane's
//! connections. A connection's packets, its socket's cache lines and the thread that
//! answers it then stay on one CPU: no cross-CPU wake-up (an inter-processor
//! interrupt, a VM exit on a virtual machine) per request. `docs/measured.md` has the
//! figures; `[shedding] lane_pinned = false` lets the threads float and spreads
//! connections by hash.
//!
//! Only those threads are pinned: the rest of the node (ingest, pipelines, HTTPS, and
//! the blocking threads a pinned thread's runtime starts for file reads, which
//! [`CpuPlacement::release_current_thread`] sets free) floats, and the scheduler moves
//! it off a busy serving CPU.

use std::io;
use std::sync::Arc;

/// The CPUs the node serves on, one serving thread each, in the order of the threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPlacement {
    cpus: Arc<[usize]>,
}

impl CpuPlacement {
    /// The CPUs the calling thread may run on (its affinity mask, so a `taskset` or a
    /// cgroup's cpuset is honoured; called before any thread is pinned, the process's),
    /// one serving thread each.
    ///
    /// # Errors
    /// The kernel refused to tell (a mask wider than 1,024 CPUs, say), or it is empty.
    pub fn allowed() -> io::Result<Self> {
        Self::of(allowed_cpus()?).ok_or_else(|| io::Error::other("no CPU in the affinity mask"))
    }

    /// A placement on these CPUs (thread `i` on `cpus[i]`); `None` when empty.
    pub fn of(cpus: Vec<usize>) -> Option<Self> {
        (!cpus.is_empty()).then(|| Self { cpus: cpus.into() })
    }

    /// How many threads it places (one per CPU).
    pub fn len(&self) -> usize {
        self.cpus.len()
    }

    /// Never true: a placement has at least one CPU (for clippy's `len` rule).
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    /// The CPU of thread `index` (thread indexes past the end wrap around).
    pub fn cpu(&self, index: usize) -> usize {
        self.cpus[index % self.cpus.len()]
    }

    /// The index of the thread placed on `cpu`, if one is.
    pub fn index_of(&self, cpu: usize) -> Option<usize> {
        self.cpus.iter().position(|&placed| placed == cpu)
    }

    /// Lets the calling thread run on every CPU of the placement again: for the
    /// blocking threads a pinned thread's runtime starts (they inherit its pin), so a
    /// burst of file reads does not queue on one CPU.
    ///
    /// # Errors
    /// As [`pin_current_thread`].
    pub fn release_current_thread(&self) -> io::Result<()> {
        set_current_thread_cpus(&self.cpus)
    }
}

/// A current-thread tokio runtime for a serving thread; with a placement, the blocking
/// threads it starts (file reads) run on every placed CPU instead of inheriting the
/// serving thread's pin.
///
/// # Errors
/// The runtime could not be built.
pub fn serving_runtime(placement: Option<&CpuPlacement>) -> io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    if let Some(placement) = placement.cloned() {
        // On a current-thread runtime this runs on the blocking pool's threads only.
        builder.on_thread_start(move || {
            if let Err(error) = placement.release_current_thread() {
                tracing::debug!(%error, "a blocking thread keeps its serving thread's CPU");
            }
        });
    }
    builder.build()
}

/// Pins the calling thread to `cpu`.
///
/// # Errors
/// The CPU is out of range or not allowed to this process, or the kernel refused.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    set_current_thread_cpus(&[cpu])
}

/// Lets the calling thread run on `cpus` only.
#[allow(unsafe_code)]
fn set_current_thread_cpus(cpus: &[usize]) -> io::Result<()> {
    let size = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if cpus.iter().any(|&cpu| cpu >= size) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "CPU number out of range",
        ));
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes one bit inside it
    // (every index is checked against the set's size above); sched_setaffinity reads
    // the set for the calling thread (pid 0) and keeps no pointer to it.
    let status = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread runs on now (`None` if the kernel does not say).
#[allow(unsafe_code)]
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

/// The CPUs in the calling thread's affinity mask, in ascending order.
#[allow(unsafe_code)]
fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is the empty set; sched_getaffinity fills at most
    // `size_of::<cpu_set_t>()` bytes of it; CPU_ISSET only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..8 * std::mem::size_of::<libc::cpu_set_t>())
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{current_cpu, pin_current_thread, CpuPlacement};

    #[test]
    fn the_allowed_cpus_cover_the_parallelism_the_runtime_sees() {
        // available_parallelism is the mask, or less under a cgroup CPU quota.
        let placement = CpuPlacement::allowed().expect("an affinity mask");
        let parallelism = std::thread::available_parallelism()
            .expect("parallelism")
            .get();
        assert!(
            placement.len() >= parallelism,
            "{placement:?} for {parallelism}"
        );
    }

    #[test]
    fn thread_indexes_wrap_and_cpus_map_back_to_their_thread() {
        let placement = CpuPlacement::of(vec![2, 5, 7]).expect("three CPUs");
        assert_eq!(
            (placement.cpu(0), placement.cpu(2), placement.cpu(4)),
            (2, 7, 5)
        );
        assert_eq!(placement.index_of(5), Some(1));
        assert_eq!(placement.index_of(3), None);
        assert!(CpuPlacement::of(Vec::new()).is_none());
    }

    #[test]
    fn a_pinned_thread_runs_on_its_cpu_and_a_bad_cpu_is_refused() {
        let placement = CpuPlacement::allowed().expect("an affinity mask");
        let last = placement.cpu(placement.len() - 1);
        let (ran_on, released) = std::thread::spawn(move || {
            pin_current_thread(last).expect("pin");
            std::thread::yield_now();
            let ran_on = current_cpu();
            placement.release_current_thread().expect("release");
            (ran_on, CpuPlacement::allowed().expect("mask"))
        })
        .join()
        .expect("thread");
        assert_eq!(ran_on, Some(last));
        assert_eq!(released, CpuPlacement::allowed().expect("mask"));
        assert!(pin_current_thread(1 << 20).is_err());
    }
}
