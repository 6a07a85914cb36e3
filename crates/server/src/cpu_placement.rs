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
//! Only those threads are pinned: the rest of the node (ingest, pipelines, HTTPS) floats,
//! and the scheduler moves it off a busy serving CPU.

use std::io;
use std::sync::Arc;

/// The CPUs the node serves on, one serving thread each, in the order of the threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPlacement {
    cpus: Arc<[usize]>,
}

impl CpuPlacement {
    /// The CPUs this process may run on (its affinity mask, so a `taskset` or a
    /// cgroup's cpuset is honoured), one serving thread each.
    ///
    /// # Errors
    /// The kernel refused to tell, or the mask is empty.
    pub fn allowed() -> io::Result<Self> {
        Self::of(allowed_cpus()?).ok_or_else(|| io::Error::other("no CPU in the affinity mask"))
    }

    /// A placement on these CPUs (thread `i` on `cpus[i]`); `None` when empty.
    pub fn of(cpus: Vec<usize>) -> Option<Self> {
        (!cpus.is_empty()).then(|| Self { cpus: cpus.into() })
    }

    /// The first `count` of these CPUs (at least one): a node whose CPU time is capped
    /// below its mask (a cgroup quota) runs fewer threads than it has CPUs.
    pub fn first(&self, count: usize) -> Self {
        Self {
            cpus: self.cpus[..count.clamp(1, self.cpus.len())].into(),
        }
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
}

/// Pins the calling thread to `cpu`.
///
/// # Errors
/// The CPU is out of range or not allowed to this process, or the kernel refused.
#[allow(unsafe_code)]
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "CPU number out of range",
        ));
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes one bit inside it
    // (the index is checked against the set's size above); sched_setaffinity reads
    // the set for the calling thread (pid 0) and keeps no pointer to it.
    let status = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
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
        assert_eq!(placement.first(parallelism).len(), parallelism);
        assert_eq!(placement.first(0).len(), 1);
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
        let ran_on = std::thread::spawn(move || {
            pin_current_thread(last).expect("pin");
            std::thread::yield_now();
            current_cpu()
        })
        .join()
        .expect("thread");
        assert_eq!(ran_on, Some(last));
        assert!(pin_current_thread(1 << 20).is_err());
    }
}
