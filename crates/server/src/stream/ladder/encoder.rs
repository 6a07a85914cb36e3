//! The supervised encoder of one stream's ladder: feeds the source rendition's segments
//! to an `ffmpeg` child as they are cut, demuxes its output (one program per rung),
//! cuts each rung on the source's segments and pushes it into the rung's rendition.
//!
//! Supervision: an encoder that cannot start (110001), exits (110002) or takes input
//! without giving output for `hang_timeout` (110003, killed) is logged with its code and
//! started again after a capped backoff (1 s doubling to 30 s; back to 1 s after a
//! minute of healthy running). The rungs resume after a discontinuity; the source
//! rendition, the relay and everything else of the MC never wait for the encoder.

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codes::LadderFault;
use media::segmenter::{RungCutter, RungSegment};
use media::ts::{DemuxEvent, Demuxer};
use media::TimelineMarker;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, watch};

use super::status::LadderStatus;
use super::{ffmpeg_args, EncodedRung, LadderSettings};
use crate::stream::package::Package;
use crate::stream::rendition::Rendition;
use packaging::tracks::TrackProbe;

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A run this long resets the backoff.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// One rung being cut: where its segments go and what cuts them.
struct RungOut {
    rendition: Arc<Rendition>,
    cutter: RungCutter,
    probe: TrackProbe,
    demuxer: Demuxer,
    program: u16,
}

/// Starts the ladder of `channel` (whose renditions include every rung of `rungs`):
/// returns its status and the task to run (until `stop`).
///
/// # Errors
/// A rung has no rendition in the channel.
pub fn start(
    channel: Arc<Package>,
    settings: LadderSettings,
    rungs: Vec<EncodedRung>,
    stop: watch::Receiver<bool>,
) -> Result<(Arc<LadderStatus>, impl std::future::Future<Output = ()>), String> {
    let mut outs = Vec::with_capacity(rungs.len());
    for (i, rung) in rungs.iter().enumerate() {
        let rendition = channel
            .rendition(&rung.name)
            .ok_or_else(|| format!("rung {} has no rendition", rung.name))?;
        outs.push(RungOut {
            rendition: Arc::clone(rendition),
            cutter: RungCutter::new(),
            probe: TrackProbe::default(),
            demuxer: Demuxer::new(),
            program: u16::try_from(i + 1).unwrap_or(u16::MAX),
        });
    }
    let names = rungs.iter().map(|r| r.name.clone()).collect();
    let status = Arc::new(LadderStatus::new(super::RungSource::Encoder, names));
    let task = supervise(channel, settings, rungs, outs, Arc::clone(&status), stop);
    Ok((status, task))
}

/// Why one encoder run ended.
enum RunEnd {
    Stopped,
    Fault(LadderFault, String),
}

async fn supervise(
    channel: Arc<Package>,
    settings: LadderSettings,
    rungs: Vec<EncodedRung>,
    mut outs: Vec<RungOut>,
    status: Arc<LadderStatus>,
    mut stop: watch::Receiver<bool>,
) {
    let stream = channel.name().to_owned();
    let mut backoff = FIRST_BACKOFF;
    let mut first = true;
    loop {
        // The encoder starts with the source.
        let mut updates = channel.main().subscribe();
        while channel.main().snapshot().newest().is_none() {
            tokio::select! {
                changed = updates.changed() => if changed.is_err() { return },
                _ = stop.wait_for(|s| *s) => return,
            }
        }
        let restarting = !std::mem::take(&mut first);
        for out in &mut outs {
            out.demuxer = Demuxer::for_program(out.program);
            if restarting {
                out.cutter.restart();
            }
        }
        let started = Instant::now();
        let end = run_once(&channel, &settings, &rungs, &mut outs, &status, &mut stop).await;
        status.running.store(false, Ordering::Relaxed);
        let healthy = started.elapsed() >= HEALTHY_RUN;
        if healthy {
            status.worked(&stream);
        }
        match end {
            RunEnd::Stopped => return,
            RunEnd::Fault(code, detail) => status.fault(&stream, code, detail),
        }
        if healthy {
            backoff = FIRST_BACKOFF;
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Runs one encoder process until it fails or the stream stops.
/// What the service manager gave this process and an encoder must not have: the
/// notify socket and the watchdog's variables (a child that could send `READY=1` or
/// keep a hung MC pinging), and the ambient capabilities (`CAP_SYS_NICE`, to renice or
/// make realtime any process on the host; `CAP_NET_BIND_SERVICE`), cleared before the
/// encoder, which decodes publisher-supplied media, runs.
#[allow(unsafe_code)]
pub(crate) fn confine(command: &mut Command) {
    for variable in [
        "NOTIFY_SOCKET",
        "WATCHDOG_USEC",
        "WATCHDOG_PID",
        "LISTEN_FDS",
        "LISTEN_PID",
        // The recordings bucket's credentials, when read from the environment.
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    ] {
        command.env_remove(variable);
    }
    // SAFETY: the closure runs in the child between fork and exec and makes one
    // async-signal-safe system call, allocating nothing.
    unsafe {
        command.pre_exec(|| {
            // Kernels without ambient capabilities (before 4.3) have none to clear.
            let _ = libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            );
            Ok(())
        });
    }
}

async fn run_once(
    channel: &Arc<Package>,
    settings: &LadderSettings,
    rungs: &[EncodedRung],
    outs: &mut [RungOut],
    status: &LadderStatus,
    stop: &mut watch::Receiver<bool>,
) -> RunEnd {
    let mut command = Command::new(&settings.encoder);
    command
        .args(ffmpeg_args(settings, rungs))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    confine(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            return RunEnd::Fault(
                LadderFault::EncoderMissing,
                format!("{}: {error}", settings.encoder),
            )
        }
    };
    status.starts.fetch_add(1, Ordering::Relaxed);
    status.pid.store(child.id().unwrap_or(0), Ordering::Relaxed);
    status.running.store(true, Ordering::Relaxed);
    tracing::info!(stream = %channel.name(), pid = child.id(), rungs = rungs.len(), "ladder encoder started");
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return RunEnd::Fault(LadderFault::EncoderExited, "no pipes to the encoder".into());
    };
    let last_words = Arc::new(Mutex::new(String::new()));
    let words = Arc::clone(&last_words);
    let stream = channel.name().to_owned();
    let stderr_task = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(stream = %stream, encoder = %line, "ladder encoder said");
            if let Ok(mut w) = words.lock() {
                *w = line;
            }
        }
    });
    let (markers_tx, markers_rx) = mpsc::unbounded_channel();
    let fed = Arc::new(AtomicU64::new(0));
    let feeder = tokio::spawn(feed(
        Arc::clone(channel.main()),
        stdin,
        markers_tx,
        Arc::clone(&fed),
    ));
    let hang = Duration::from_secs_f64(settings.hang_timeout);
    let end = cut(channel, outs, status, stdout, markers_rx, &fed, hang, stop).await;
    feeder.abort();
    let end = match end {
        Some(end) => end,
        None => {
            // The output ended: the process exited (or is about to).
            let code = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            let said = last_words.lock().map(|w| w.clone()).unwrap_or_default();
            let how = match code {
                Ok(Ok(exit)) => exit.to_string(),
                _ => "closed its output".to_owned(),
            };
            RunEnd::Fault(LadderFault::EncoderExited, format!("{how}: {said}"))
        }
    };
    kill(&mut child).await;
    stderr_task.abort();
    end
}

async fn kill(child: &mut Child) {
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
}

/// A source segment announced to the cutters: its marker and its audio frames.
type Announced = (TimelineMarker, Vec<media::Frame>);

/// Feeds the encoder the source's video frames as they arrive (from the next keyframe
/// on; again from a keyframe after frames were missed), and announces each source
/// segment cut from now on (marker and audio) to the cutters. Ends when the encoder
/// stops reading or the source ends.
async fn feed(
    source: Arc<Rendition>,
    mut stdin: ChildStdin,
    markers: mpsc::UnboundedSender<Announced>,
    fed: Arc<AtomicU64>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let mut frames = source.tap_frames();
    let mut updates = source.subscribe();
    let mut announced = source.snapshot().newest().map(|s| s.msn);
    let mut muxer: Option<media::ts::FrameMuxer> = None;
    let mut want_keyframe = true;
    loop {
        tokio::select! {
            frame = frames.recv() => match frame {
                Ok(frame) if frame.kind() == media::TrackKind::Video => {
                    if want_keyframe && !frame.keyframe {
                        continue;
                    }
                    want_keyframe = false;
                    let muxer = muxer.get_or_insert_with(|| {
                        media::ts::FrameMuxer::new(media::timeline::Tracks {
                            video: Some(frame.codec),
                            audio: None,
                        })
                    });
                    // Counted before the write: a write that blocks on a hung encoder
                    // is input the encoder owes output for.
                    fed.fetch_add(1, Ordering::Relaxed);
                    if stdin.write_all(&muxer.write(&frame)).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(stream = %source.name(), missed, "the ladder encoder fell behind the source: frames skipped");
                    want_keyframe = true;
                }
                Err(RecvError::Closed) => return,
            },
            changed = updates.changed() => {
                if changed.is_err() {
                    return;
                }
                for segment in super::cut::new_source_segments(&source, &mut announced) {
                    let Some(view) = segment.fmp4() else { continue };
                    let audio = media::ts::demux_frames(&segment.data)
                        .into_iter()
                        .filter(|f| f.kind() == media::TrackKind::Audio)
                        .collect();
                    if markers.send((view.marker, audio)).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// Reads the encoder's output and cuts the rungs until the output ends (`None`), the
/// encoder hangs, or the stream stops.
#[allow(clippy::too_many_arguments)]
async fn cut(
    channel: &Package,
    outs: &mut [RungOut],
    status: &LadderStatus,
    mut stdout: ChildStdout,
    mut markers: mpsc::UnboundedReceiver<Announced>,
    fed: &AtomicU64,
    hang: Duration,
    stop: &mut watch::Receiver<bool>,
) -> Option<RunEnd> {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut events = Vec::new();
    let mut last_output = Instant::now();
    let mut fed_at_output = fed.load(Ordering::Relaxed);
    let mut check = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => return Some(RunEnd::Stopped),
            Some((marker, audio)) = markers.recv() => {
                for (i, out) in outs.iter_mut().enumerate() {
                    for frame in &audio {
                        out.probe.observe(frame);
                    }
                    let done = out.cutter.source_segment_sharing(marker, audio.clone());
                    publish(channel, out, status, i, done);
                }
            }
            read = stdout.read(&mut buffer) => {
                let n = match read {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => n,
                };
                last_output = Instant::now();
                fed_at_output = fed.load(Ordering::Relaxed);
                for (i, out) in outs.iter_mut().enumerate() {
                    events.clear();
                    out.demuxer.push(&buffer[..n], &mut events);
                    for event in events.drain(..) {
                        if let DemuxEvent::Frame(frame) = event {
                            out.probe.observe(&frame);
                            let done = out.cutter.frame(frame);
                            publish(channel, out, status, i, done);
                        }
                    }
                }
            }
            _ = check.tick() => {
                let waiting = fed.load(Ordering::Relaxed) > fed_at_output;
                if waiting && last_output.elapsed() >= hang {
                    return Some(RunEnd::Fault(
                        LadderFault::EncoderHung,
                        format!("no output for {:.0} s while fed", last_output.elapsed().as_secs_f64()),
                    ));
                }
            }
        }
    }
}

/// Pushes rung `index`'s finished segments (see [`super::cut::publish`]).
fn publish(
    channel: &Package,
    out: &RungOut,
    status: &LadderStatus,
    index: usize,
    done: Vec<RungSegment>,
) {
    super::cut::publish(
        channel,
        &out.rendition,
        status,
        index,
        out.cutter.stats().skipped,
        &out.probe.summary(),
        done,
    );
}

#[cfg(test)]
mod confine_tests {
    use super::*;

    /// The service manager's variables do not reach an encoder: a child must not be
    /// able to notify for the MC.
    #[tokio::test]
    async fn an_encoder_gets_no_notify_socket_or_watchdog() {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("echo \"[$NOTIFY_SOCKET|$WATCHDOG_USEC|$WATCHDOG_PID|$KEPT]\"")
            .env("NOTIFY_SOCKET", "/run/systemd/notify")
            .env("WATCHDOG_USEC", "2000000")
            .env("WATCHDOG_PID", "1")
            .env("KEPT", "yes")
            .stdout(Stdio::piped());
        confine(&mut command);
        let out = command.output().await.expect("sh runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[|||yes]");
    }
}
