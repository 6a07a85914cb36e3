//! Backup inputs: a stream's ordered list of inputs, all running at once (hot
//! standby), of which only the active one reaches the stream.
//!
//! ```text
//! input 0 (primary) ─┐
//! input 1 (backup)  ─┼─► (index, InputEvent) ─► Switcher ─► IngestSender (the stream)
//! input 2 (backup)  ─┘                             └──────► watch<StreamInputStatus>
//! ```
//!
//! When the active input delivers nothing for `source_timeout` (`publish_timeout` for a
//! publish input, whose publisher sends steadily while it is there), the first live input
//! (in configuration order) takes over; when a higher-priority input has delivered
//! steadily for `hold_down`, it takes over again. Each switch, and each reconnect or
//! resume of the active input, sends [`IngestEvent::Discontinuity`] first, and the new
//! input's media starts at its next video keyframe (at once for audio-only inputs).

mod failure_log;
mod faults;
mod registry;
mod switch;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

pub use registry::PublishRegistry;

use crate::http_pull::{self, redact_url, Backoff, HttpPullConfig};
use crate::status::{
    stopped, InputCounters, InputError, InputEvent, InputState, InputStatus, StreamInputStatus,
};
use crate::udp::{UdpConfig, UdpInput};
use crate::{IngestEvent, IngestSender};
use failure_log::FailureLog;
use faults::{FaultChange, Faults, Snapshot};
use registry::{Registration, Session};
use switch::Switcher;

/// One input of a stream.
pub enum InputSpec {
    /// MPEG-TS pulled over HTTP(S).
    HttpTs {
        /// `http://` or `https://` URL.
        url: String,
        /// PEM CA certificates to trust instead of the system roots.
        ca_file: Option<PathBuf>,
    },
    /// MPEG-TS over UDP, unicast or multicast.
    Udp {
        /// The local address to bind.
        bind: SocketAddr,
        /// An IPv4 multicast group to join.
        multicast: Option<Ipv4Addr>,
        /// The local interface address to join the group on.
        interface: Option<Ipv4Addr>,
    },
    /// A publish (RTMP, RTMPS, SRT) to this stream's name, through a
    /// [`PublishRegistry`].
    Rtmp {
        /// The stream key a publisher must give; `None` accepts any publisher.
        key: Option<String>,
        /// A second way in for the same stream: publishers of the slot publish to
        /// `<stream>@<slot>` (a platform's backup feed publishes to `<meeting>@backup`
        /// beside its primary), and the supervisor fails over between them like between
        /// any inputs.
        slot: Option<String>,
    },
    /// A stream played from a remote RTMP(S) server.
    RtmpPull {
        /// `rtmp://` or `rtmps://` URL (`host[:port]/app/stream[?query]`).
        url: String,
        /// PEM CA certificates to trust instead of the system roots (`rtmps://`).
        ca_file: Option<PathBuf>,
    },
    /// MPEG-TS pulled over SRT from an encoder in listener mode.
    SrtPull {
        /// The input's settings (`srt://host:port?streamid=…`).
        config: crate::srt::caller::SrtCallerConfig,
    },
    /// Events produced in-process (the built-in demo source, tests): the input is live
    /// while events arrive and down once every sender is dropped.
    Channel {
        /// What to show operators.
        name: String,
        /// Where the events come from.
        events: mpsc::Receiver<IngestEvent>,
    },
}

impl std::fmt::Debug for InputSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.description())
    }
}

impl InputSpec {
    /// What the input is, for operators: URLs lose their credentials, keys are hidden.
    pub fn description(&self) -> String {
        match self {
            InputSpec::HttpTs { url, .. } => redact_url(url),
            InputSpec::Udp {
                bind,
                multicast: Some(group),
                interface,
            } => match interface {
                Some(interface) => format!("udp://{group}:{} on {interface}", bind.port()),
                None => format!("udp://{group}:{}", bind.port()),
            },
            InputSpec::Udp { bind, .. } => format!("udp://{bind}"),
            InputSpec::Rtmp { slot: None, .. } => "rtmp publish".to_string(),
            InputSpec::Rtmp {
                slot: Some(slot), ..
            } => format!("rtmp publish @{slot}"),
            InputSpec::RtmpPull { url, .. } => redact_url(url),
            // Neither the streamid (it may hold a key) nor the passphrase is shown.
            InputSpec::SrtPull { config } => format!("srt://{}", config.addr),
            InputSpec::Channel { name, .. } => name.clone(),
        }
    }
}

/// A stream's inputs and switching times.
#[derive(Debug)]
pub struct SupervisorConfig {
    /// The stream's name (RTMP publishers publish to it).
    pub stream: String,
    /// The inputs, primary first.
    pub inputs: Vec<InputSpec>,
    /// How long the active input may deliver nothing before a backup takes over.
    pub source_timeout: Duration,
    /// How long an active publish input (RTMP, RTMPS, SRT) may deliver nothing before a
    /// live backup takes over, when shorter than `source_timeout`: a publisher that is
    /// connected sends steadily, and an SRT publisher that is gone (killed, cut off)
    /// just goes silent. Without a live backup its silence counts after
    /// `source_timeout`, as any input's. `None` means `source_timeout`.
    pub publish_timeout: Option<Duration>,
    /// How long a higher-priority input must deliver steadily before it takes over
    /// again; `None` means `source_timeout`.
    pub hold_down: Option<Duration>,
    /// Connect timeout of HTTP inputs.
    pub connect_timeout: Duration,
    /// Read timeout of HTTP inputs (headers, and each gap between body bytes).
    pub read_timeout: Duration,
    /// Reconnect delays of HTTP inputs (and rebind delays of UDP inputs).
    pub backoff: Backoff,
    /// A credential HTTP inputs send as `Authorization: Bearer` (a node pulling its
    /// MC's relays sends its node token).
    pub http_bearer: Option<String>,
    /// The stream cuts other audio languages from its inputs: their alternate audio
    /// streams are forwarded. Otherwise they are dropped here, as if the inputs had
    /// none (nothing held for them, the standby's recent-media cache unchanged).
    pub alternate_audio: bool,
}

impl SupervisorConfig {
    /// A configuration with a 5 s source timeout, hold-down = source timeout, and 5 s
    /// HTTP timeouts.
    pub fn new(stream: impl Into<String>, inputs: Vec<InputSpec>) -> Self {
        SupervisorConfig {
            stream: stream.into(),
            inputs,
            source_timeout: Duration::from_secs(5),
            publish_timeout: None,
            hold_down: None,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(5),
            backoff: Backoff::default(),
            http_bearer: None,
            alternate_audio: false,
        }
    }
}

/// Why a supervisor could not start.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SupervisorError {
    /// A stream needs at least one input.
    #[error("stream {0} has no input")]
    NoInputs(String),
    /// An `Rtmp` input was configured but no registry was given.
    #[error("stream {0} has an rtmp input but no publish registry")]
    NoRegistry(String),
    /// The stream already accepts RTMP publish through another supervisor.
    #[error("stream {0} is already registered for rtmp publish")]
    AlreadyRegistered(String),
    /// More than one `Rtmp` input with the same slot on one stream.
    #[error("stream {0} has more than one rtmp input of the same slot")]
    SeveralRtmp(String),
}

/// The name publishers of `stream`'s publish input use: the stream's own, or
/// `<stream>@<slot>` for a slot beside it.
pub fn publish_name(stream: &str, slot: Option<&str>) -> String {
    match slot {
        Some(slot) => format!("{stream}@{slot}"),
        None => stream.to_owned(),
    }
}

/// A running supervisor.
#[derive(Debug)]
pub struct SupervisorHandle {
    status: watch::Receiver<StreamInputStatus>,
    counters: Vec<Arc<InputCounters>>,
    task: JoinHandle<()>,
}

impl SupervisorHandle {
    /// The inputs' status, updated on every change and at least every tick.
    pub fn status(&self) -> watch::Receiver<StreamInputStatus> {
        self.status.clone()
    }

    /// Each input's live counters, in configuration order, for metrics.
    pub fn counters(&self) -> &[Arc<InputCounters>] {
        &self.counters
    }

    /// Waits until the supervisor and its inputs have stopped.
    pub async fn join(self) {
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "input supervisor task failed");
        }
    }
}

/// Starts the supervisor of one stream: its inputs run until `shutdown` fires (or
/// `output` is closed), and the active input's events go to `output`.
///
/// # Errors
/// [`SupervisorError`] for a configuration that cannot run.
pub fn spawn(
    config: SupervisorConfig,
    registry: Option<&PublishRegistry>,
    output: IngestSender,
    shutdown: watch::Receiver<bool>,
) -> Result<SupervisorHandle, SupervisorError> {
    let stream = config.stream.clone();
    if config.inputs.is_empty() {
        return Err(SupervisorError::NoInputs(stream));
    }
    // One registration per publish input, by input index: `<stream>` or
    // `<stream>@<slot>`.
    let mut registrations: HashMap<usize, Registration> = HashMap::new();
    for (index, input) in config.inputs.iter().enumerate() {
        let InputSpec::Rtmp { key, slot } = input else {
            continue;
        };
        let Some(registry) = registry else {
            return Err(SupervisorError::NoRegistry(stream));
        };
        let name = publish_name(&stream, slot.as_deref());
        if registrations.values().any(|r| r.stream() == name) {
            return Err(SupervisorError::SeveralRtmp(stream));
        }
        let registration = registry
            .register(&name, key.clone())
            .ok_or_else(|| SupervisorError::AlreadyRegistered(name.clone()))?;
        registrations.insert(index, registration);
    }

    let source_timeout = config.source_timeout;
    let hold_down = config.hold_down.unwrap_or(source_timeout);
    let publish_timeout = config
        .publish_timeout
        .map_or(source_timeout, |t| t.min(source_timeout));
    let silence_timeouts: Vec<Duration> = config
        .inputs
        .iter()
        .map(|spec| match spec {
            InputSpec::Rtmp { .. } => publish_timeout,
            _ => source_timeout,
        })
        .collect();
    let (merged_tx, merged_rx) = mpsc::channel::<(usize, InputEvent)>(256);
    let mut inputs = JoinSet::new();
    let mut counters = Vec::new();
    let mut descriptions = Vec::new();
    let http_template = HttpPullConfig {
        url: String::new(),
        ca_file: None,
        connect_timeout: config.connect_timeout,
        read_timeout: config.read_timeout,
        backoff: config.backoff,
        bearer: config.http_bearer.clone(),
    };
    for (index, spec) in config.inputs.into_iter().enumerate() {
        let counter = Arc::new(InputCounters::default());
        descriptions.push(spec.description());
        let (events_tx, events_rx) = mpsc::channel(64);
        let sessions = registrations
            .get_mut(&index)
            .and_then(|r| r.sessions.take());
        let input = run_input(
            spec,
            sessions,
            &http_template,
            Arc::clone(&counter),
            events_tx,
            shutdown.clone(),
        );
        // Every line an input logs names its stream and itself.
        let span = tracing::warn_span!("input", stream = %stream, input = %descriptions[index]);
        inputs.spawn(tracing::Instrument::instrument(input, span));
        inputs.spawn(tag(index, events_rx, merged_tx.clone()));
        counters.push(counter);
    }
    drop(merged_tx);

    let initial = StreamInputStatus {
        active: None,
        inputs: descriptions
            .iter()
            .zip(&counters)
            .map(|(description, counter)| input_status(description, counter, None, None))
            .collect(),
        switches: 0,
    };
    let (status_tx, status_rx) = watch::channel(initial);
    let now = Instant::now();
    let supervisor = Supervision {
        faults: (0..descriptions.len())
            .map(|_| Faults::new(source_timeout, now))
            .collect(),
        failures: FailureLog::new(descriptions.len()),
        stream,
        switcher: Switcher::with_silence_timeouts(&silence_timeouts, source_timeout, hold_down),
        descriptions,
        counters: counters.clone(),
        alternate_audio: config.alternate_audio,
        output,
        status: status_tx,
        tick: (publish_timeout.min(hold_down) / 4).max(Duration::from_millis(10)),
    };
    let task = tokio::spawn(async move {
        let _registrations = registrations;
        let _inputs = inputs; // dropping the set aborts every input task
        supervisor.run(merged_rx, shutdown).await;
    });
    Ok(SupervisorHandle {
        status: status_rx,
        counters,
        task,
    })
}

async fn tag(
    index: usize,
    mut events: mpsc::Receiver<InputEvent>,
    merged: mpsc::Sender<(usize, InputEvent)>,
) {
    while let Some(event) = events.recv().await {
        if merged.send((index, event)).await.is_err() {
            return;
        }
    }
}

fn run_input(
    spec: InputSpec,
    sessions: Option<mpsc::Receiver<Session>>,
    http_template: &HttpPullConfig,
    counters: Arc<InputCounters>,
    events: mpsc::Sender<InputEvent>,
    shutdown: watch::Receiver<bool>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let http = http_template.clone();
    async move {
        match spec {
            InputSpec::HttpTs { url, ca_file } => {
                let config = HttpPullConfig {
                    url,
                    ca_file,
                    ..http
                };
                http_pull::run(config, counters, events, shutdown).await;
            }
            InputSpec::Udp {
                bind,
                multicast,
                interface,
            } => {
                let config = UdpConfig {
                    multicast,
                    interface,
                    ..UdpConfig::new(bind)
                };
                udp_input(config, http.backoff, counters, events, shutdown).await;
            }
            InputSpec::Rtmp { .. } => {
                if let Some(sessions) = sessions {
                    rtmp_input(sessions, counters, events).await;
                }
            }
            InputSpec::RtmpPull { url, ca_file } => {
                let config = crate::rtmp::pull::RtmpPullConfig {
                    ca_file,
                    connect_timeout: http.connect_timeout,
                    read_timeout: http.read_timeout,
                    backoff: http.backoff,
                    ..crate::rtmp::pull::RtmpPullConfig::new(url)
                };
                crate::rtmp::pull::run(config, counters, events, shutdown).await;
            }
            InputSpec::SrtPull { config } => {
                let config = crate::srt::caller::SrtCallerConfig {
                    connect_timeout: http.connect_timeout,
                    read_timeout: http.read_timeout,
                    backoff: http.backoff,
                    ..config
                };
                crate::srt::caller::run(config, counters, events, shutdown).await;
            }
            InputSpec::Channel { events: source, .. } => {
                forward_session(source, &counters, &events, InputError::ChannelClosed).await;
            }
        }
    }
}

async fn udp_input(
    config: UdpConfig,
    backoff: Backoff,
    counters: Arc<InputCounters>,
    events: mpsc::Sender<InputEvent>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut attempt = 0;
    loop {
        match UdpInput::bind(&config) {
            Ok(input) => return input.run(counters, events, shutdown).await,
            Err(e) => {
                InputCounters::add(&counters.errors, 1);
                // The supervisor logs the failure (once per change).
                tracing::debug!(bind = %config.bind, error = %e, "udp input cannot start");
                if events.send(InputEvent::Failed(e.into())).await.is_err() {
                    return;
                }
            }
        }
        let delay = backoff.delay(attempt, 0);
        attempt += 1;
        tokio::select! {
            _ = stopped(&mut shutdown) => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

async fn rtmp_input(
    mut sessions: mpsc::Receiver<Session>,
    counters: Arc<InputCounters>,
    events: mpsc::Sender<InputEvent>,
) {
    while let Some(session) = sessions.recv().await {
        if !forward_session(session, &counters, &events, InputError::PublisherGone).await {
            return;
        }
    }
}

/// Forwards one session's events; reports `ended` when its senders are gone. False
/// when `events` is closed.
async fn forward_session(
    mut session: mpsc::Receiver<IngestEvent>,
    counters: &InputCounters,
    events: &mpsc::Sender<InputEvent>,
    ended: InputError,
) -> bool {
    InputCounters::add(&counters.connects, 1);
    if events.send(InputEvent::Connected).await.is_err() {
        return false;
    }
    while let Some(event) = session.recv().await {
        if let IngestEvent::Frame(frame) = &event {
            counters.count_frame(frame.kind());
            InputCounters::add(&counters.bytes, frame.data.len() as u64);
        }
        if events.send(InputEvent::Media(event)).await.is_err() {
            return false;
        }
    }
    InputCounters::add(&counters.errors, 1);
    events.send(InputEvent::Failed(ended)).await.is_ok()
}

fn input_status(
    description: &str,
    counters: &InputCounters,
    slot: Option<&switch::Slot>,
    faults: Option<&Faults>,
) -> InputStatus {
    InputStatus {
        description: description.to_string(),
        state: slot.map_or(crate::status::InputState::Connecting, |s| s.state.clone()),
        bytes: InputCounters::get(&counters.bytes),
        frames: InputCounters::get(&counters.frames),
        last_data_at: slot.and_then(|s| s.last_media),
        errors: InputCounters::get(&counters.errors),
        dropped: InputCounters::get(&counters.dropped),
        faults: faults.map(Faults::reports).unwrap_or_default(),
    }
}

struct Supervision {
    stream: String,
    /// Each input's faults, in configuration order.
    faults: Vec<Faults>,
    /// Each input's failures, logged once per change (and reminders while down).
    failures: FailureLog,
    switcher: Switcher,
    descriptions: Vec<String>,
    counters: Vec<Arc<InputCounters>>,
    /// Forward the inputs' alternate audio (see [`SupervisorConfig::alternate_audio`]).
    alternate_audio: bool,
    output: IngestSender,
    status: watch::Sender<StreamInputStatus>,
    tick: Duration,
}

impl Supervision {
    async fn run(
        mut self,
        mut events: mpsc::Receiver<(usize, InputEvent)>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut ticker = tokio::time::interval(self.tick);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut out = Vec::new();
        loop {
            let before = self.switcher.active();
            // Status is republished on ticks and state changes, not on every frame.
            // Shutdown first: an input that ends because the process stops is no fault.
            let changed = tokio::select! {
                biased;
                _ = stopped(&mut shutdown) => break,
                _ = ticker.tick() => {
                    self.on_tick(Instant::now(), &mut out);
                    true
                }
                event = events.recv() => {
                    let Some((index, event)) = event else { break };
                    if *shutdown.borrow() {
                        break;
                    }
                    let media = matches!(event, InputEvent::Media(_));
                    self.handle(index, event, &mut out);
                    !media
                }
            };
            let switched = self.switcher.active() != before;
            if switched {
                let description = self
                    .switcher
                    .active()
                    .and_then(|i| self.descriptions.get(i))
                    .map_or("none", String::as_str);
                let takeover = out.contains(&IngestEvent::Takeover);
                let replayed = out.len();
                tracing::info!(stream = %self.stream, input = %description, takeover, replayed, "active input changed");
            }
            for event in out.drain(..) {
                if self.output.send(event).await.is_err() {
                    tracing::debug!(stream = %self.stream, "stream closed, stopping inputs");
                    return;
                }
            }
            if changed || switched {
                self.publish_status();
            }
        }
        tracing::debug!(stream = %self.stream, "input supervisor stopped");
    }

    /// Rejects inputs whose bytes give no frame, checks for stalls and switches, then
    /// logs the faults that started and ended.
    fn on_tick(&mut self, now: Instant, out: &mut Vec<IngestEvent>) {
        let snapshots: Vec<Snapshot> = self.counters.iter().map(|c| Snapshot::of(c)).collect();
        for (index, (faults, snap)) in self.faults.iter().zip(&snapshots).enumerate() {
            let state = self.switcher.slots().get(index).map(|s| &s.state);
            let may_reject = matches!(
                state,
                Some(InputState::Connecting | InputState::Stalled | InputState::Rejected { .. })
            );
            if let Some(reason) = faults.no_frames(snap, now).filter(|_| may_reject) {
                self.switcher.on_rejected(index, reason);
            }
        }
        self.switcher.on_tick(now, out);
        for (index, (faults, snap)) in self.faults.iter_mut().zip(snapshots).enumerate() {
            let Some(slot) = self.switcher.slots().get(index) else {
                continue;
            };
            let input = self.descriptions.get(index).map_or("", String::as_str);
            for change in faults.update(snap, &slot.state, now) {
                log_fault(&self.stream, input, &change);
            }
        }
    }

    fn handle(&mut self, index: usize, event: InputEvent, out: &mut Vec<IngestEvent>) {
        match event {
            InputEvent::Media(IngestEvent::AlternateAudio { .. }) if !self.alternate_audio => {}
            InputEvent::Connecting => self.switcher.on_connecting(index),
            InputEvent::Connected => self.switcher.on_connected(index, out),
            InputEvent::Media(event) => {
                let now = Instant::now();
                let input = self.descriptions.get(index).map_or("", String::as_str);
                self.failures.delivered(&self.stream, index, input, now);
                self.switcher.on_media(index, event, now, out);
            }
            InputEvent::Failed(error) => {
                let input = self.descriptions.get(index).map_or("", String::as_str);
                self.failures
                    .failed(&self.stream, index, input, &error, Instant::now());
                self.switcher.on_failed(index, error.to_string(), out);
            }
        }
    }

    fn publish_status(&self) {
        let inputs: Vec<InputStatus> = self
            .descriptions
            .iter()
            .zip(&self.counters)
            .zip(self.switcher.slots())
            .zip(&self.faults)
            .map(|(((description, counters), slot), faults)| {
                input_status(description, counters, Some(slot), Some(faults))
            })
            .collect();
        let next = StreamInputStatus {
            active: self.switcher.active(),
            inputs,
            switches: self.switcher.switches,
        };
        self.status.send_if_modified(|current| {
            if *current == next {
                false
            } else {
                *current = next;
                true
            }
        });
    }
}

/// One log line per fault start and end, with the stream, the input and the code. A
/// failed connection's start and end are not repeated: `FailureLog` logs them.
fn log_fault(stream: &str, input: &str, change: &FaultChange) {
    match change {
        // An input going down and coming back is logged by `FailureLog`.
        FaultChange::Started(report) | FaultChange::Ended(report)
            if report.code == codes::InputFault::Down => {}
        FaultChange::Started(report) => tracing::warn!(
            stream = %stream,
            input = %input,
            code = report.code.code(),
            fault = report.code.label(),
            detail = %report.detail,
            "input fault"
        ),
        FaultChange::Ended(report) => tracing::info!(
            stream = %stream,
            input = %input,
            code = report.code.code(),
            fault = report.code.label(),
            lasted_ms = report
                .ended
                .map_or(0, |end| end.saturating_duration_since(report.since).as_millis() as u64),
            detail = %report.detail,
            "input fault ended"
        ),
    }
}
