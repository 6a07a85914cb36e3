//! Searching the highest load a node keeps up with.

use std::time::Duration;

use server::shed::ShedSettings;

use crate::node_run::run;
use crate::shed_load::{ClassReport, Plan};

/// The share of each class's due requests a node must answer (2xx, completed in the
/// window) to count as keeping up with a load.
const KEPT_UP_SHARE: f64 = 0.97;

/// The measured window of a trial's 5-s run: the first second is skipped.
pub(crate) const TRIAL_WINDOW_SECONDS: f64 = 4.0;

/// Whether a trial's node kept up: every class answered at least [`KEPT_UP_SHARE`] of
/// what was due for it (`due_per_second`, in class order) over the trial's window.
pub(crate) fn kept_up(reports: &[ClassReport], due_per_second: impl Iterator<Item = f64>) -> bool {
    reports
        .iter()
        .zip(due_per_second)
        .all(|(r, due)| r.ok_done_in_window as f64 >= KEPT_UP_SHARE * due * TRIAL_WINDOW_SECONDS)
}

/// The step of [`served_mix_capacity`]'s multiples.
pub(crate) const SERVED_STEP: f64 = 0.025;

/// The node's capacity for the traffic it served in an overload run: the highest
/// multiple of each class's served rate, paced over the run's own connections
/// (`plan`), that the node keeps up with (every class ≥ 97 % answered) when
/// configured as `deployed` with the level held at 0, the viewer probe (`probe`)
/// running as in the overload run. Goodput is then 1 / that multiple of the capacity
/// for the same traffic: what shedding and the overload cost in the node's work,
/// whatever mix the priorities chose.
pub(crate) fn served_mix_capacity(
    deployed: &ShedSettings,
    segment_bytes: usize,
    plan: &Plan,
    probe: &Plan,
    served: &[ClassReport],
    seconds: f64,
) -> Option<f64> {
    let per_class = plan.connections_per_class();
    let paced = |multiple: f64| Plan {
        classes: plan
            .classes
            .iter()
            .zip(served)
            .zip(&per_class)
            .map(|((class, r), &n)| {
                let rate = r.ok_done_in_window as f64 / seconds * multiple;
                class.clone().paced_at(rate / n.max(1) as f64)
            })
            .collect(),
        rate_per_connection: Some(1.0),
        duration: Duration::from_secs(5),
        skip_missed: false,
        ..plan.clone()
    };
    highest_kept(SERVED_STEP, SERVED_STEP, 0.5, 2.0, |multiple| {
        let (reports, trace, _) =
            run(true, deployed, segment_bytes, &paced(multiple), Some(probe));
        let due = served
            .iter()
            .map(|s| s.ok_done_in_window as f64 / seconds * multiple);
        let kept = kept_up(&reports, due);
        println!(
            "    the served traffic paced at {:.3}x over the same connections, nothing shed: node CPU busy {:.0} %{}",
            multiple,
            trace.cpu.unwrap_or(f64::NAN) * 100.0,
            if kept { ": kept up" } else { ": fell behind" }
        );
        kept.then_some(())
    })
    .map(|(multiple, ())| multiple)
}

/// The highest multiple a `trial` keeps up with (returns `Some`), searched from 1: up in
/// steps of `up` while it keeps up (below `ceiling`), or down in steps of `down` until
/// it does (above `floor`); with what that trial returned.
pub(crate) fn highest_kept<T>(
    up: f64,
    down: f64,
    floor: f64,
    ceiling: f64,
    mut trial: impl FnMut(f64) -> Option<T>,
) -> Option<(f64, T)> {
    let mut best = None;
    let mut multiple = 1.0;
    let mut going_up = None;
    loop {
        let outcome = trial(multiple);
        let kept = outcome.is_some();
        if let Some(value) = outcome {
            best = Some((multiple, value));
        }
        match (*going_up.get_or_insert(kept), kept) {
            (true, true) if multiple < ceiling => multiple += up,
            (false, false) if multiple > floor => multiple -= down,
            _ => return best,
        }
    }
}
