//! The one route table of a node and an MC: every route's path pattern, and from the
//! same row its metrics label and its shedding kind (SHED-1). The router is built from
//! [`Route::NODE`] and [`Route::MC`] (one handler per row, matched exhaustively in
//! `routes` and `mc`), and [`Target::of_path`] finds a request's row the way the
//! router does, so a request is classified by the route that answers it.

use super::stream_file::{FileRole, StreamFile};
use crate::metrics::RouteKind as MetricsKind;
use shed::RouteKind as ShedKind;

/// One row of the route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `/`: a redirect to the player page.
    Root,
    /// `/player`: the shipped player page.
    Player,
    /// `/player/hls.min.js`: the player's script.
    PlayerScript,
    /// `/metrics`: Prometheus text.
    Metrics,
    /// `/healthz`: the process serves (liveness; the watchdog's probe).
    Healthz,
    /// `/readyz`: the process is ready for viewers (readiness).
    Readyz,
    /// `/api/node`: who this node is.
    NodeStatus,
    /// `/api/time`: the DASH UTCTiming clock.
    UtcTiming,
    /// `/api/streams`: every stream's status.
    Streams,
    /// `/api/streams/{name}`: one stream's status.
    StreamStatus,
    /// `POST /api/streams/{name}/pause`: the operator's test failure (OTT-OPS-2).
    StreamPause,
    /// `POST /api/streams/{name}/resume`.
    StreamResume,
    /// `/api/ott`: the Backups screen's data.
    OttReport,
    /// `/backups`: the Backups screen.
    BackupsPage,
    /// `/api/drain`: the operator's drain of this node (GET state, POST start,
    /// DELETE stop).
    Drain,
    /// `/steering/{group}`: a switching player's steering manifest (RFC 8216bis §7).
    Steering,
    /// `/watch/{group}[.m3u8|.mpd|.ll.m3u8]`: the way in, a 302 to a node that serves
    /// the viewer now.
    Watch,
    /// `/api/fault-rules`: list and add fault-injection rules (FIT-1).
    FaultRules,
    /// `DELETE /api/fault-rules/{id}`.
    FaultRule,
    /// `POST /telemetry`: player beacons.
    Telemetry,
    /// `POST /telemetry/kpi`: the experiments' KPI beacons.
    KpiBeacon,
    /// `/experiments`: the Experiments screen.
    ExperimentsPage,
    /// `/api/experiments`: list and define experiments.
    Experiments,
    /// `/api/experiments/report`.
    ExperimentsReport,
    /// `DELETE /api/experiments/{id}`.
    Experiment,
    /// `POST /api/experiments/{id}/start`.
    ExperimentStart,
    /// `/{stream}/{file}`: every file of a stream (playlists, segments, relay, archive).
    StreamFile,
    /// `/{stream}/{rendition}/{file}`: the live files of one rung of a stream's ladder
    /// (its media playlists, segments, parts and relay).
    RenditionFile,
    /// MC: `/api/openapi.json`.
    McOpenApi,
    /// MC: `/api/meetings`: list, create.
    McMeetings,
    /// MC: `/api/meetings/{id}`.
    McMeeting,
    /// MC: `PUT /api/meetings/{id}/viewer-limit`.
    McViewerLimit,
    /// MC: `POST /api/meetings/{id}/captions`: cues for the meeting's subtitles.
    McCaptions,
    /// MC: `GET /api/meetings/{id}/recordings`: the meeting's recordings on object storage.
    McRecordings,
    /// MC: `POST /api/meetings/{id}/viewer-tokens`: a viewer token for a private meeting.
    McViewerTokens,
    /// MC: `DELETE /api/meetings/{id}/viewers/{viewer}`: the host removes a viewer.
    McViewer,
    /// MC: `POST /api/meetings/{id}/{action}` (start, lock, unlock, close).
    McMeetingAction,
    /// MC: `/api/nodes/sync`: a node's exchange with its MC.
    McNodeSync,
}

impl Route {
    /// The routes every node serves, most specific first (the order [`Target::of_path`]
    /// tries them in; the catch-all stream route comes last).
    pub const NODE: [Route; 28] = [
        Route::Root,
        Route::Player,
        Route::PlayerScript,
        Route::Metrics,
        Route::Healthz,
        Route::Readyz,
        Route::NodeStatus,
        Route::UtcTiming,
        Route::Streams,
        Route::StreamStatus,
        Route::StreamPause,
        Route::StreamResume,
        Route::OttReport,
        Route::BackupsPage,
        Route::Drain,
        Route::Steering,
        Route::Watch,
        Route::FaultRules,
        Route::FaultRule,
        Route::Telemetry,
        Route::KpiBeacon,
        Route::ExperimentsPage,
        Route::Experiments,
        Route::ExperimentsReport,
        Route::Experiment,
        Route::ExperimentStart,
        Route::StreamFile,
        Route::RenditionFile,
    ];

    /// The routes an MC adds to the node's, most specific first.
    pub const MC: [Route; 10] = [
        Route::McOpenApi,
        Route::McMeetings,
        Route::McMeeting,
        Route::McViewerLimit,
        Route::McCaptions,
        Route::McRecordings,
        Route::McViewerTokens,
        Route::McViewer,
        Route::McMeetingAction,
        Route::McNodeSync,
    ];

    /// The path pattern, in the router's syntax (`{name}` is one path segment).
    pub const fn pattern(self) -> &'static str {
        match self {
            Route::Root => "/",
            Route::Player => "/player",
            Route::PlayerScript => "/player/hls.min.js",
            Route::Metrics => "/metrics",
            Route::Healthz => "/healthz",
            Route::Readyz => "/readyz",
            Route::NodeStatus => "/api/node",
            Route::UtcTiming => packaging::url::UTC_TIMING_PATH,
            Route::Streams => "/api/streams",
            Route::StreamStatus => "/api/streams/{name}",
            Route::StreamPause => "/api/streams/{name}/pause",
            Route::StreamResume => "/api/streams/{name}/resume",
            Route::OttReport => "/api/ott",
            Route::BackupsPage => "/backups",
            Route::Drain => "/api/drain",
            Route::Steering => "/steering/{group}",
            Route::Watch => "/watch/{name}",
            Route::FaultRules => "/api/fault-rules",
            Route::FaultRule => "/api/fault-rules/{id}",
            Route::Telemetry => "/telemetry",
            Route::KpiBeacon => "/telemetry/kpi",
            Route::ExperimentsPage => "/experiments",
            Route::Experiments => "/api/experiments",
            Route::ExperimentsReport => "/api/experiments/report",
            Route::Experiment => "/api/experiments/{id}",
            Route::ExperimentStart => "/api/experiments/{id}/start",
            Route::StreamFile => "/{stream}/{file}",
            Route::RenditionFile => "/{stream}/{rendition}/{file}",
            Route::McOpenApi => "/api/openapi.json",
            Route::McMeetings => "/api/meetings",
            Route::McMeeting => "/api/meetings/{id}",
            Route::McViewerLimit => "/api/meetings/{id}/viewer-limit",
            Route::McCaptions => "/api/meetings/{id}/captions",
            Route::McRecordings => "/api/meetings/{id}/recordings",
            Route::McViewerTokens => "/api/meetings/{id}/viewer-tokens",
            Route::McViewer => "/api/meetings/{id}/viewers/{viewer}",
            Route::McMeetingAction => "/api/meetings/{id}/{action}",
            Route::McNodeSync => "/api/nodes/sync",
        }
    }

    /// Whether requests of this route are never shed, whatever the load, the fault
    /// rules and the experiments: the health probes, whose refusal would take a node
    /// out of its load balancer (or get it restarted) for being busy. Each answers
    /// from memory, without reading a body.
    pub const fn never_shed(self) -> bool {
        matches!(self, Route::Healthz | Route::Readyz)
    }

    /// The `route` label of `brdyun_http_requests_total`.
    fn metrics_kind(self) -> MetricsKind {
        match self {
            Route::Root | Route::Telemetry | Route::KpiBeacon => MetricsKind::Other,
            Route::Player | Route::PlayerScript | Route::BackupsPage | Route::ExperimentsPage => {
                MetricsKind::Player
            }
            Route::Metrics => MetricsKind::Metrics,
            Route::Steering | Route::Watch => MetricsKind::Playlist,
            // Per file: see `Target::metrics_kind`.
            Route::StreamFile | Route::RenditionFile => MetricsKind::Other,
            _ => MetricsKind::Api,
        }
    }

    /// The shedding kind (SHED-1). Operator control — the screens, the fault-rule,
    /// experiments and pause APIs, the MC's changes — and the metrics scrape are
    /// `admin`: the lowest CRITICAL kind under overload, and never shed by a fault rule
    /// or an experiment, so an operator can always see the node and remove the rule
    /// that sheds. Status reads are DEGRADED: they hurt no playback.
    fn shed_kind(self, read_only: bool) -> ShedKind {
        match self {
            Route::Player | Route::PlayerScript | Route::UtcTiming | Route::Watch => {
                ShedKind::PlaybackStart
            }
            // The redirect to the player ranks with unknown paths (as it always has).
            Route::Root => ShedKind::Other,
            // Steering keeps a watching player on a node that works: a live playlist.
            Route::Steering => ShedKind::LivePlaylist,
            Route::NodeStatus | Route::McOpenApi => ShedKind::Status,
            // Never shed at all (`never_shed`); as operator control they are CRITICAL,
            // so a connection opening with a probe is served on the priority lane.
            Route::Healthz | Route::Readyz => ShedKind::Admin,
            Route::Streams | Route::StreamStatus | Route::McMeeting => ShedKind::MeetingMetadata,
            Route::McMeetings if read_only => ShedKind::MeetingMetadata,
            Route::Metrics
            | Route::StreamPause
            | Route::StreamResume
            | Route::OttReport
            | Route::BackupsPage
            | Route::Drain
            | Route::FaultRules
            | Route::FaultRule
            | Route::ExperimentsPage
            | Route::Experiments
            | Route::ExperimentsReport
            | Route::Experiment
            | Route::ExperimentStart
            | Route::McMeetings
            | Route::McViewerLimit
            | Route::McCaptions
            | Route::McRecordings
            | Route::McViewerTokens
            | Route::McViewer
            | Route::McMeetingAction => ShedKind::Admin,
            Route::Telemetry | Route::KpiBeacon => ShedKind::Telemetry,
            // A node's sync feeds every viewer of that node, as a relay does.
            Route::McNodeSync => ShedKind::Relay,
            // Per file: see `Target::shed_kind`.
            Route::StreamFile | Route::RenditionFile => ShedKind::Other,
        }
    }

    /// Whether `path` (without query) is answered by this route, and the `{file}`
    /// segment when the route is the stream route.
    fn matches(self, path: &str) -> Option<Option<&str>> {
        let mut pattern = self.pattern().split('/');
        let mut given = path.split('/');
        let mut file = None;
        loop {
            match (pattern.next(), given.next()) {
                (None, None) => return Some(file),
                (Some(p), Some(g)) if p.starts_with('{') => {
                    if g.is_empty() {
                        return None;
                    }
                    if p == "{file}" {
                        file = Some(g);
                    }
                }
                (Some(p), Some(g)) if p == g => {}
                _ => return None,
            }
        }
    }
}

/// The first path segments of the routes that start with a literal one (`""` for
/// `/`): a constant, so finding a route never allocates; a test derives it from the
/// table.
const LITERAL_FIRST_SEGMENTS: [&str; 11] = [
    "",
    "api",
    "backups",
    "experiments",
    "healthz",
    "metrics",
    "player",
    "readyz",
    "steering",
    "telemetry",
    "watch",
];

/// A request's place in the route table, found once at the edge and carried in the
/// request's context ([`crate::http::request_context::RequestContext`]): the route, and for
/// the stream route its parsed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The route that answers the path; `None` for the router's fallback (404).
    pub route: Option<Route>,
    /// The stream file, for [`Route::StreamFile`] and [`Route::RenditionFile`]; `None`
    /// for a name no stream serves.
    pub file: Option<StreamFile>,
}

impl Target {
    /// Finds the route of `path` (no query) as the router does: node routes, then the
    /// MC's, the stream route last. No allocation.
    pub fn of_path(path: &str) -> Self {
        // The hot path: a first segment no literal route starts with can only be a
        // stream's name, so a stream file skips the walk over the table.
        let first = path.strip_prefix('/').and_then(|p| p.split('/').next());
        if first.is_some_and(|f| !LITERAL_FIRST_SEGMENTS.contains(&f)) {
            return Self::of_stream_path(path);
        }
        let routes = Route::NODE[..Route::NODE.len() - 2]
            .iter()
            .chain(Route::MC.iter())
            .chain([Route::StreamFile, Route::RenditionFile].iter());
        for &route in routes {
            if let Some(file) = route.matches(path) {
                return Self {
                    route: Some(route),
                    file: file.and_then(StreamFile::parse),
                };
            }
        }
        Self {
            route: None,
            file: None,
        }
    }

    /// The stream routes' match in one pass over the bytes: `/{stream}/{file}` or
    /// `/{stream}/{rendition}/{file}`, every segment non-empty.
    fn of_stream_path(path: &str) -> Self {
        let none = Self {
            route: None,
            file: None,
        };
        let Some(rest) = path.strip_prefix('/') else {
            return none;
        };
        let (mut slashes, mut file_at, mut after_slash) = (0, 0, true);
        for (i, &b) in rest.as_bytes().iter().enumerate() {
            if b == b'/' {
                if after_slash || slashes == 2 {
                    return none;
                }
                slashes += 1;
                file_at = i + 1;
                after_slash = true;
            } else {
                after_slash = false;
            }
        }
        let route = match (slashes, after_slash) {
            (1, false) => Route::StreamFile,
            (2, false) => Route::RenditionFile,
            _ => return none,
        };
        Self {
            route: Some(route),
            file: StreamFile::parse(&rest[file_at..]),
        }
    }

    /// The stream file a handler serves: the one found at the edge (`found`), else
    /// `file` parsed (a handler called without the edge, as in unit tests).
    pub fn stream_file(found: Option<&Target>, file: &str) -> Option<StreamFile> {
        match found {
            Some(target)
                if matches!(target.route, Some(Route::StreamFile | Route::RenditionFile)) =>
            {
                target.file
            }
            _ => StreamFile::parse(file),
        }
    }

    /// The shedding kind (SHED-1); `read_only` for GET and HEAD.
    pub fn shed_kind(&self, read_only: bool) -> ShedKind {
        match (self.route, self.file.map(|f| f.role())) {
            (Some(Route::StreamFile | Route::RenditionFile), Some(role)) => match role {
                FileRole::PlaybackStart => ShedKind::PlaybackStart,
                FileRole::LivePlaylist => ShedKind::LivePlaylist,
                FileRole::LiveSegment => ShedKind::LiveSegment,
                FileRole::Relay => ShedKind::Relay,
                FileRole::ArchivePlaylist => ShedKind::ArchivePlaylist,
                FileRole::ArchiveMedia => ShedKind::ArchiveSegment,
                FileRole::Malformed => ShedKind::Other,
            },
            (Some(route), _) => route.shed_kind(read_only),
            (None, _) => ShedKind::Other,
        }
    }

    /// The `route` label of `brdyun_http_requests_total`.
    pub fn metrics_kind(&self) -> MetricsKind {
        match (self.route, self.file.map(|f| f.role())) {
            (Some(Route::StreamFile | Route::RenditionFile), Some(role)) => match role {
                FileRole::PlaybackStart | FileRole::LivePlaylist | FileRole::ArchivePlaylist => {
                    MetricsKind::Playlist
                }
                FileRole::LiveSegment | FileRole::ArchiveMedia => MetricsKind::Segment,
                FileRole::Relay => MetricsKind::Relay,
                FileRole::Malformed => MetricsKind::Other,
            },
            (Some(route), _) => route.metrics_kind(),
            (None, _) => MetricsKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path each pattern answers, its parameters filled in.
    fn example(route: Route) -> String {
        route
            .pattern()
            .replace("{stream}", "s")
            .replace("{file}", "index.m3u8")
            .replace("{rendition}", "240p")
            .replace("{name}", "s")
            .replace("{id}", "7")
            .replace("{action}", "lock")
            .replace("{viewer}", "alice")
    }

    #[test]
    fn every_pattern_finds_its_own_row() {
        for route in Route::NODE.into_iter().chain(Route::MC) {
            let target = Target::of_path(&example(route));
            assert_eq!(target.route, Some(route), "{}", route.pattern());
        }
    }

    #[test]
    fn the_fast_path_agrees_with_the_walk() {
        let mut derived: Vec<&str> = Route::NODE
            .iter()
            .chain(Route::MC.iter())
            .filter_map(|r| r.pattern().strip_prefix('/')?.split('/').next())
            .filter(|f| !f.starts_with('{'))
            .collect();
        derived.sort_unstable();
        derived.dedup();
        assert_eq!(derived, LITERAL_FIRST_SEGMENTS);
        // The walk over the whole table, literal routes first, as the router does.
        let walk = |path: &str| {
            Route::NODE[..Route::NODE.len() - 2]
                .iter()
                .chain(Route::MC.iter())
                .chain([Route::StreamFile, Route::RenditionFile].iter())
                .find(|r| r.matches(path).is_some())
                .copied()
        };
        let mut paths: Vec<String> = Route::NODE
            .into_iter()
            .chain(Route::MC)
            .map(example)
            .collect();
        paths.extend(
            [
                "/s/seg-1.ts",
                "/s/",
                "/s/a/b",
                "/s/240p/seg-1.ts",
                "/s/a/b/c",
                "/api/x/seg-1.ts",
                "/s",
                "",
                "/",
                "//",
                "/api/x",
                "/x/index.m3u8",
            ]
            .map(String::from),
        );
        for path in &paths {
            assert_eq!(Target::of_path(path).route, walk(path), "{path}");
        }
        // And any path made of segments like theirs, the file parsed alike.
        let file_of_walk = |path: &str| {
            walk(path)
                .and_then(|r| r.matches(path))
                .flatten()
                .and_then(StreamFile::parse)
        };
        proptest::proptest!(|(segments in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                proptest::strategy::Just("api".to_owned()),
                proptest::strategy::Just("index.m3u8".to_owned()),
                proptest::strategy::Just("seg-1.ts".to_owned()),
                "[a-z0-9.%-]{1,6}",
            ],
            0..5,
        ), rooted in proptest::bool::ANY)| {
            let path = format!("{}{}", if rooted { "/" } else { "" }, segments.join("/"));
            let target = Target::of_path(&path);
            proptest::prop_assert_eq!(target.route, walk(&path), "{}", path);
            if matches!(target.route, Some(Route::StreamFile | Route::RenditionFile)) {
                proptest::prop_assert_eq!(target.file, file_of_walk(&path), "{}", path);
            }
        });
    }

    #[test]
    fn static_segments_win_over_parameters() {
        let route = |path: &str| Target::of_path(path).route;
        assert_eq!(
            route("/api/experiments/report"),
            Some(Route::ExperimentsReport)
        );
        assert_eq!(
            route("/api/meetings/7/viewer-limit"),
            Some(Route::McViewerLimit)
        );
        assert_eq!(route("/player/hls.min.js"), Some(Route::PlayerScript));
        assert_eq!(route("/api/seg-1.ts"), Some(Route::StreamFile));
        assert_eq!(route("/s/"), None);
        assert_eq!(route("/s/a/b"), Some(Route::RenditionFile));
        assert_eq!(route("/s/a/"), None);
        assert_eq!(route("/s/a/b/c"), None);
        assert_eq!(route("//index.m3u8"), None);
    }

    #[test]
    fn catch_up_is_degraded_and_live_is_critical() {
        let shed = |path: &str| Target::of_path(path).shed_kind(true);
        assert_eq!(
            shed("/s/index-1700000000-30.m3u8"),
            ShedKind::ArchivePlaylist
        );
        assert_eq!(
            shed("/s/index-1700000000-now.m3u8"),
            ShedKind::ArchivePlaylist
        );
        assert_eq!(shed("/s/timeshift_rel-60.m3u8"), ShedKind::ArchivePlaylist);
        assert_eq!(
            shed("/s/fmp4-1700000000-30.m3u8"),
            ShedKind::ArchivePlaylist
        );
        assert_eq!(
            shed("/s/index-1700000000-30.mpd"),
            ShedKind::ArchivePlaylist
        );
        assert_eq!(
            shed("/s/archive-1700000000-3600.ts"),
            ShedKind::ArchiveSegment
        );
        assert_eq!(
            shed("/s/archive-1700000000-3600.mp4"),
            ShedKind::ArchiveSegment
        );
        assert_eq!(shed("/s/dvr-4.ts"), ShedKind::ArchiveSegment);
        assert_eq!(shed("/s/dvr-4-v.m4s"), ShedKind::ArchiveSegment);
        assert_eq!(shed("/s/index.m3u8"), ShedKind::PlaybackStart);
        assert_eq!(shed("/s/mono.m3u8"), ShedKind::LivePlaylist);
        assert_eq!(shed("/s/seg-4.ts"), ShedKind::LiveSegment);
        assert_eq!(shed("/s/part-4-0.m4s"), ShedKind::LiveSegment);
        assert_eq!(shed("/s/mpegts"), ShedKind::Relay);
        assert_eq!(shed("/s/favicon.ico"), ShedKind::Other);
        assert_eq!(shed("/favicon.ico"), ShedKind::Other);
    }

    #[test]
    fn operators_and_status_have_their_own_kinds() {
        let shed = |path: &str, read: bool| Target::of_path(path).shed_kind(read);
        assert_eq!(shed("/api/streams", true), ShedKind::MeetingMetadata);
        assert_eq!(shed("/api/streams/s", true), ShedKind::MeetingMetadata);
        assert_eq!(shed("/api/meetings", true), ShedKind::MeetingMetadata);
        assert_eq!(shed("/api/meetings", false), ShedKind::Admin);
        assert_eq!(shed("/api/meetings/7", true), ShedKind::MeetingMetadata);
        assert_eq!(shed("/metrics", true), ShedKind::Admin);
        assert_eq!(shed("/api/node", true), ShedKind::Status);
        for admin in [
            "/api/fault-rules",
            "/api/fault-rules/3",
            "/api/experiments",
            "/api/experiments/report",
            "/api/experiments/x/start",
            "/api/streams/s/pause",
            "/api/streams/s/resume",
            "/api/ott",
            "/backups",
            "/experiments",
        ] {
            assert_eq!(shed(admin, true), ShedKind::Admin, "{admin}");
        }
        assert_eq!(shed("/telemetry", false), ShedKind::Telemetry);
        assert_eq!(shed("/telemetry/kpi", false), ShedKind::Telemetry);
        assert_eq!(shed("/api/nodes/sync", true), ShedKind::Relay);
        assert_eq!(shed("/player", true), ShedKind::PlaybackStart);
        assert_eq!(shed("/healthz", true), ShedKind::Admin);
        assert_eq!(shed("/readyz", true), ShedKind::Admin);
    }

    #[test]
    fn only_the_probes_are_never_shed() {
        for route in Route::NODE.into_iter().chain(Route::MC) {
            let probe = matches!(route, Route::Healthz | Route::Readyz);
            assert_eq!(route.never_shed(), probe, "{route:?}");
        }
        assert_eq!(Target::of_path("/healthz").route, Some(Route::Healthz));
        assert_eq!(Target::of_path("/readyz").route, Some(Route::Readyz));
    }

    #[test]
    fn metrics_labels_follow_the_file() {
        let label = |path: &str| Target::of_path(path).metrics_kind();
        assert_eq!(label("/s/index.m3u8"), MetricsKind::Playlist);
        assert_eq!(label("/s/index-1700000000-30.m3u8"), MetricsKind::Playlist);
        assert_eq!(label("/s/seg-1.ts"), MetricsKind::Segment);
        assert_eq!(label("/s/archive-1700000000-30.ts"), MetricsKind::Segment);
        assert_eq!(label("/s/archive-1700000000-30.mp4"), MetricsKind::Segment);
        assert_eq!(label("/s/mpegts"), MetricsKind::Relay);
        assert_eq!(label("/player"), MetricsKind::Player);
        assert_eq!(label("/api/node"), MetricsKind::Api);
        assert_eq!(label("/metrics"), MetricsKind::Metrics);
        assert_eq!(label("/telemetry"), MetricsKind::Other);
    }
}
