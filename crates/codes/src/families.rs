//! The code families beyond the meetings of seed 000: OTT refusals (105xxx), the
//! experiments API (106xxx), the fault-rule API (107xxx), request errors every route
//! may answer (108xxx), the back-pressure answers (109xxx), the faults of a meeting's
//! ABR ladder (110xxx), of a stream's inputs (111xxx), the caption API and transcripts
//! (112xxx), the viewer authorization of private meetings (113xxx), the entries of
//! an MC's answer a node refuses (114xxx) and a process's health and readiness (115xxx).

use crate::row::{CodeInfo, LogLevel};

/// A row of a family's table (no seed text: the Chinese message is empty).
const fn row(
    code: u32,
    status: u16,
    message: &'static str,
    label: &'static str,
    retryable: bool,
) -> CodeInfo {
    CodeInfo {
        code,
        status,
        message,
        message_zh: "",
        level: LogLevel::Info,
        label,
        retryable,
    }
}

/// Declares a family: the enum, its `ALL` and its rows, from one list.
macro_rules! family {
    (
        $(#[$meta:meta])*
        $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => ($code:expr, $status:expr, $message:expr, $label:expr, $retry:expr),)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every code of the family, in table order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// This code's row of the table.
            pub fn info(self) -> &'static CodeInfo {
                match self {
                    $($name::$variant => {
                        const ROW: CodeInfo = row($code, $status, $message, $label, $retry);
                        &ROW
                    })+
                }
            }

            crate::row::row_accessors!();
        }
    };
}

family! {
    /// The OTT answers that are not content: a refused pass, a refused backup viewer, a
    /// stream that does not work here with no node to send the viewer to, a login's
    /// limits (OTT-GRP-3, OTT-OVL-1, OTT-PROT-2, OTT-GRP-6), a bad steering request.
    /// 403 for passes and logins, 429 for a login's limit, 400/404 for steering
    /// requests, 503 for the rest (a player moves on at once).
    OttRefusal {
        /// The pass is not a pass (bad encoding, truncated).
        PassMalformed => (105_001, 403, "the pass is malformed", "pass_malformed", false),
        /// The pass names a view key this node does not hold (too old, another domain).
        PassUnknownKey => (105_002, 403, "the pass is signed with a view key this node does not hold", "pass_unknown_key", false),
        /// The pass signature does not match.
        PassForged => (105_003, 403, "the pass signature is not valid", "pass_forged", false),
        /// The pass is for another stream.
        PassWrongStream => (105_004, 403, "the pass is for another stream", "pass_wrong_stream", false),
        /// The pass expired (beyond 240 s of clock tolerance).
        PassExpired => (105_005, 403, "the pass has expired", "pass_expired", false),
        /// The pass is bound to another viewer address.
        PassWrongViewer => (105_006, 403, "the pass is bound to another viewer", "pass_wrong_viewer", false),
        /// A viewer from another node refused: CPU above the error threshold.
        OverloadCpu => (105_011, 503, "this node takes no more backup viewers: CPU overloaded", "overload_cpu", false),
        /// A viewer from another node refused: network above the error threshold.
        OverloadNetwork => (105_012, 503, "this node takes no more backup viewers: network overloaded", "overload_network", false),
        /// A viewer from another node refused: the backup-session limit is reached.
        OverloadSessions => (105_013, 503, "this node takes no more backup viewers: session limit reached", "overload_sessions", false),
        /// The stream does not work here and no node of its group can take the viewer.
        NoBackup => (105_020, 503, "the stream does not work on this node and no other node can serve it", "no_backup", false),
        /// A login's connection limit on this node is reached.
        LoginLimit => (105_030, 429, "the login's connection limit on this node is reached", "login_limit", false),
        /// An unknown login or a wrong token.
        LoginRefused => (105_031, 403, "unknown login or wrong token", "login_refused", false),
        /// A steering request without a valid pathway list (`p=`: 1 to 8 ids of
        /// `[a-zA-Z0-9._-]`, none repeated).
        BadSteering => (105_040, 400, "the steering request has no valid pathway list", "bad_steering", false),
        /// A steering request for a group no node of the mesh has a member of.
        SteeringUnknownGroup => (105_041, 404, "no node of the mesh has a member of this group", "steering_unknown_group", false),
    }
}

family! {
    /// Refusals of the experiments API and the KPI beacon sink; `field` names the part
    /// of the caller's input at fault.
    ExperimentsError {
        /// The beacon is not of the beacon format.
        BadBeacon => (106_001, 400, "the beacon is malformed", "bad_beacon", false),
        /// The body is larger than the route accepts.
        TooLarge => (106_002, 413, "the body is too large", "body_too_large", false),
        /// The definition cannot work.
        BadDefinition => (106_010, 400, "the experiment definition is invalid", "bad_definition", false),
        /// No experiment has this id.
        UnknownExperiment => (106_011, 404, "no such experiment", "unknown_experiment", false),
        /// The experiment already runs, or is disabled.
        Conflict => (106_012, 409, "the experiment is running or disabled", "experiment_conflict", false),
    }
}

family! {
    /// Refusals of the fault-injection API (FIT-1); `field` names the field at fault.
    FaultRuleError {
        /// The body or a field is unusable.
        Invalid => (107_001, 400, "the fault rule is invalid", "bad_fault_rule", false),
        /// No active rule has this id.
        UnknownRule => (107_002, 404, "no such fault rule", "unknown_fault_rule", false),
        /// The cap of active rules is reached.
        Full => (107_003, 409, "fault rules are full: remove one first", "fault_rules_full", false),
    }
}

family! {
    /// What any route may answer about the request itself.
    RequestError {
        /// No such resource on this node.
        NotFound => (108_001, 404, "no such resource", "not_found", false),
        /// The segment number is not (or no longer) in the live window.
        SegmentGone => (108_002, 404, "segment not in the live window", "segment_gone", false),
        /// A malformed path or query parameter.
        BadRequest => (108_003, 400, "malformed request", "bad_request", false),
        /// A call without the right token.
        Unauthorized => (108_004, 401, "missing or wrong token", "unauthorized", false),
        /// A body larger than the route accepts.
        TooLarge => (108_005, 413, "the request body is too large", "body_too_large", false),
        /// A blocking LL-HLS request whose part did not come in time.
        PartTimedOut => (108_006, 503, "the requested part did not appear in time", "part_timed_out", true),
        /// A field of the body is missing or unusable (`field` names it).
        InvalidField => (108_007, 400, "a field of the request is invalid", "invalid_field", false),
        /// The path exists but not for this method (the `Allow` header lists those that do).
        MethodNotAllowed => (108_008, 405, "method not allowed for this resource", "method_not_allowed", false),
        /// A client address already holds as many connections as the node takes from one.
        TooManyConnections => (108_009, 429, "too many connections from this address", "too_many_connections", true),
        /// The node already holds as many connections as it takes.
        ConnectionsFull => (108_010, 503, "the node takes no more connections", "connections_full", true),
        /// The request body did not arrive whole within the body deadline (a client that
        /// stops sending, or trickles): answered and the connection closed.
        BodyTimedOut => (108_011, 408, "the request body did not arrive in time", "body_timed_out", true),
        /// A call of an operator API with a body that is not JSON (`Content-Type` must
        /// be `application/json`, which makes a browser ask first: CORS preflight).
        NotJson => (108_012, 415, "the request body must be application/json", "not_json", false),
        /// A call of an operator API from a web page of another origin (its `Origin` is
        /// not this server's host): refused, so a page cannot act for the operator.
        CrossOrigin => (108_013, 403, "cross-origin calls of this API are refused", "cross_origin", false),
    }
}

family! {
    /// The back-pressure answer of a shed request (SHED-3): its body also carries the
    /// seed's `maxRetries` and `retryAfterSeconds`.
    Shed {
        /// The request was shed (by overload, a fault rule or an experiment).
        BackPressure => (109_001, 503, "shed: retry as the answer says", "shed", true),
        /// A transcript or catch-up master over the node's cap on archive scans: the
        /// same answer shape, with this code.
        ArchiveBusy => (109_002, 503, "the node reads its archive for as many requests as it may: retry as the answer says", "archive_busy", true),
    }
}

family! {
    /// Faults of a stream's ABR ladder (110xxx): not answers to a request, but the codes
    /// of the ladder's log lines and of its status (`ladder` in `/api/streams/{name}`).
    /// Each is temporary: the encoder is restarted, a rung listed again once aligned.
    LadderFault {
        /// The encoder program could not be started (not installed, not executable).
        EncoderMissing => (110_001, 503, "the ladder encoder cannot be started", "encoder_missing", true),
        /// The encoder exited (crashed, or refused its input).
        EncoderExited => (110_002, 503, "the ladder encoder exited", "encoder_exited", true),
        /// The encoder took input but gave no output for the hang timeout: killed.
        EncoderHung => (110_003, 503, "the ladder encoder stopped producing output", "encoder_hung", true),
        /// A rung's segment does not start with a keyframe at the source segment's start:
        /// players cannot switch there, so the rung is not offered until it is aligned.
        RungMisaligned => (110_004, 503, "a ladder rung is not aligned with the source's segments", "rung_misaligned", true),
    }
}

family! {
    /// Faults of a stream's inputs (111xxx): the codes of an input's log lines and of
    /// its `fault` in `/api/streams/{name}`, and one answer to viewers, 111010, for a
    /// stream whose inputs deliver nothing it can use; 111020–111025 are the ingest
    /// listeners' refusals and cuts, 111026–111030 their refusals of a publisher at the
    /// handshake, 111031 an SRT listener's restart (logs and `/metrics`). All are temporary (a source that heals clears
    /// them) but 111025–111028 and 111030.
    InputFault {
        /// The demuxer finds damage in the input's MPEG-TS: lost or flagged packets,
        /// lost sync, PES or PSI that cannot be read.
        Damaged => (111_001, 503, "the input's transport stream is damaged", "input_damaged", true),
        /// Bytes arrive but no frame comes out of them for the source timeout: the
        /// input is rejected and a backup takes over.
        NoFrames => (111_002, 503, "the input delivers bytes but no frame", "input_no_frames", true),
        /// The input was live and has delivered nothing for the source timeout.
        Stalled => (111_003, 503, "the input delivers nothing", "input_stalled", true),
        /// The input's connection or publishing session failed.
        Down => (111_004, 503, "the input's connection failed", "input_down", true),
        /// The input's program lists a video stream, but only audio comes out of it.
        NoVideo => (111_005, 503, "the input's video stream delivers no picture", "input_no_video", true),
        /// A viewer's answer: the stream has no media because every input that
        /// delivers bytes delivers nothing usable.
        StreamDown => (111_010, 503, "the stream is down: its input delivers nothing usable", "stream_down", true),
        /// An ingest listener (RTMP) closed a connection at accept: its address already
        /// holds as many connections that have not published as one address may.
        ListenerAddressFull => (111_020, 429, "too many unpublished ingest connections from this address", "ingest_address_full", true),
        /// An ingest listener closed a connection at accept: it holds as many as it takes.
        ListenerFull => (111_021, 503, "the ingest listener takes no more connections", "ingest_listener_full", true),
        /// An ingest connection was cut: no publish was accepted within the publish
        /// deadline after the accept, however many bytes it sent.
        PublishDeadline => (111_022, 408, "the connection did not start publishing in time", "ingest_publish_deadline", true),
        /// A publisher was cut: it delivered fewer bytes in a window than the floor.
        PublisherTooSlow => (111_023, 408, "the publisher delivered too few bytes in a window", "ingest_too_slow", true),
        /// An ingest connection was cut: it did not read the server's replies in time.
        PublisherNotReading => (111_024, 408, "the publisher did not read the server's replies in time", "ingest_not_reading", true),
        /// An RTMPS connection was closed: its TLS handshake failed (the publisher does
        /// not trust the certificate, speaks plain RTMP to the TLS port, or sent
        /// garbage). One that never finishes is cut at the publish deadline (111022).
        TlsHandshakeFailed => (111_025, 400, "the ingest connection's TLS handshake failed", "ingest_tls_handshake", false),
        /// An SRT caller was refused at the handshake: its streamid cannot be read, or
        /// asks for something other than publishing (`m=request`, a file transfer).
        BadStreamId => (111_026, 400, "the ingest connection's stream id cannot be read, names no meeting id (1 to 64 letters, digits, `-`, `_`) or is not a publish", "ingest_bad_stream_id", false),
        /// A publisher was refused: no meeting of that name takes publish on this listener.
        UnknownStream => (111_027, 404, "no meeting of that name takes publish here", "ingest_unknown_stream", false),
        /// A publisher was refused: its stream key is missing or wrong.
        WrongKey => (111_028, 403, "the stream key is missing or wrong", "ingest_wrong_key", false),
        /// A publisher was refused: the meeting already has a live publisher on this
        /// way in (it is free again once that one leaves).
        StreamBusy => (111_029, 409, "the meeting already has a publisher", "ingest_stream_busy", true),
        /// An SRT caller was refused: its encryption does not match the meeting's (no
        /// passphrase where one is required, one where none is set, or a wrong one).
        BadPassphrase => (111_030, 403, "the SRT passphrase is missing, unexpected or wrong", "ingest_bad_passphrase", false),
        /// The SRT listening socket failed (libsrt reported an error on it) and a new
        /// one was opened on the same port; connected publishers go on, a caller
        /// handshaking at that moment retries.
        ListenerRestarted => (111_031, 503, "the SRT listening socket failed and was opened again", "ingest_srt_restarted", true),
    }
}

family! {
    /// Refusals of the caption API (112xxx), one per problem a captioner can fix:
    /// 400 for a cue that is wrong in itself, 409 for one the stream cannot place,
    /// 429 for a flood.
    CaptionError {
        /// The text is empty, too long, has too many lines, a control character, or
        /// the body is not UTF-8.
        BadText => (112_001, 400, "the cue's text is not acceptable", "caption_bad_text", false),
        /// The language is not a BCP 47 tag, or the name is empty or too long.
        BadLanguage => (112_002, 400, "the caption track's language or name is not acceptable", "caption_bad_language", false),
        /// The duration, offset or date of a cue is out of range.
        BadTiming => (112_003, 400, "the cue's timing is out of range", "caption_bad_timing", false),
        /// The cue ends before the part of the timeline still open (already cut).
        Past => (112_004, 409, "the cue ends before the part of the stream still open", "caption_past", false),
        /// The cue starts more than 30 s ahead of the live edge.
        Future => (112_005, 409, "the cue starts too far ahead of the live edge", "caption_future", false),
        /// The stream already has the most subtitle tracks it may have.
        TooManyTracks => (112_006, 409, "the stream has as many caption tracks as it may", "caption_too_many_tracks", false),
        /// Too many cues wait to be placed or cut: the captioner must slow down.
        Flood => (112_007, 429, "too many cues are waiting: send fewer", "caption_flood", true),
        /// The meeting has no live stream on this MC to put the cue on.
        NotLive => (112_008, 409, "the meeting is not live on this MC", "caption_not_live", true),
        /// The request holds no cue or more than a request may.
        BadBatch => (112_009, 400, "a request holds 1 to 20 cues", "caption_bad_batch", false),
        /// A transcript (`captions-…vtt`) of a period longer than a transcript covers.
        TranscriptTooLong => (112_010, 400, "a transcript covers at most 4 hours: ask for a shorter period", "transcript_too_long", false),
    }
}

family! {
    /// Private meetings (113xxx): a viewer without a valid token or session is refused
    /// (403, one code per reason, so a platform can tell a forged token from an expired
    /// one); the MC's token API refuses a bad request (400).
    AccessRefusal {
        /// A private meeting's playlist asked for with neither a token nor a session.
        TokenMissing => (113_001, 403, "this meeting is private: a viewer token is needed", "token_missing", false),
        /// The token is not a JWT (segments, base64url, JSON, a claim's type).
        TokenMalformed => (113_002, 403, "the viewer token is malformed", "token_malformed", false),
        /// The token names a key this node does not know (retired, or another platform).
        TokenUnknownKey => (113_003, 403, "the viewer token is signed with an unknown key", "token_unknown_key", false),
        /// The signature does not verify, or the algorithm is not EdDSA.
        TokenForged => (113_004, 403, "the viewer token's signature is not valid", "token_forged", false),
        /// Past the token's expiry.
        TokenExpired => (113_005, 403, "the viewer token has expired", "token_expired", false),
        /// Before the token's not-before time.
        TokenNotYetValid => (113_006, 403, "the viewer token is not valid yet", "token_not_yet_valid", false),
        /// The token is for another audience, or lacks the viewer or meeting.
        TokenIncomplete => (113_007, 403, "the viewer token is not a brdyun viewer token", "token_incomplete", false),
        /// A valid token for another meeting.
        TokenOtherMeeting => (113_008, 403, "the viewer token is for another meeting", "token_other_meeting", false),
        /// The session is not a session.
        SessionMalformed => (113_010, 403, "the session is malformed", "session_malformed", false),
        /// The session is forged, or another meeting's (or another domain's).
        SessionForged => (113_011, 403, "the session is not valid for this meeting", "session_forged", false),
        /// The session has ended: the player must open the meeting again with a token.
        SessionExpired => (113_012, 403, "the session has ended", "session_expired", false),
        /// The host removed this viewer from the meeting.
        ViewerRemoved => (113_013, 403, "the host removed this viewer from the meeting", "viewer_removed", false),
        /// The viewer already watches in as many sessions on this node as its token
        /// allows (`max_sessions`).
        TooManySessions => (113_014, 429, "the viewer watches in as many sessions as its token allows", "too_many_sessions", false),
        /// The session was issued to another address (an IPv6 one: another /64): a
        /// session is its viewer's alone, never shared or copied.
        SessionOtherAddress => (113_015, 403, "the session was issued to another address", "session_other_address", false),
        /// The MC's token or removal request is invalid (`field` says which part).
        BadRequest => (113_020, 400, "the viewer request is invalid", "viewer_bad_request", false),
    }
}

family! {
    /// Entries of an MC's sync answer a node refuses (114xxx): not answers to a
    /// request, but the codes of the node's log lines. The node keeps the rest of the
    /// answer; a refused meeting is treated as absent from it.
    McAnswerFault {
        /// A meeting id outside the stream-name grammar, or listed twice.
        BadMeetingId => (114_001, 502, "the MC's answer names a meeting with an invalid id", "mc_bad_meeting_id", false),
        /// A ladder rung name outside the rung grammar (a path, `..`, a leading dot).
        BadRung => (114_002, 502, "the MC's answer names an invalid ladder rung", "mc_bad_rung", false),
        /// More meetings, rungs, viewer keys or removed viewers than a node takes.
        TooMany => (114_003, 502, "the MC's answer lists more entries than a node takes", "mc_too_many", false),
        /// A viewer key or removed-viewer id that is not of its format.
        BadKey => (114_004, 502, "the MC's answer carries an invalid viewer key or viewer id", "mc_bad_key", false),
        /// A private meeting or viewer keys over a plain-HTTP link that is not allowed
        /// to carry them (`[mc] allow_insecure`).
        Insecure => (114_005, 502, "the MC link is not HTTPS: private meetings and viewer keys are refused", "mc_insecure", false),
        /// Audio languages outside the rules of a meeting's languages (too many, a code
        /// twice or not ISO 639-2, a bad name or PID).
        BadLanguage => (114_006, 502, "the MC's answer lists invalid audio languages", "mc_bad_language", false),
    }
}

family! {
    /// A process's health and readiness (115xxx): the answers of `/healthz` (115002)
    /// and `/readyz` (115001, with one reason code per cause in its `reasons`). Each is
    /// temporary: a probe asks again.
    Health {
        /// The process is not ready for viewers; its `reasons` say why.
        NotReady => (115_001, 503, "the process is not ready for viewers", "not_ready", true),
        /// A runtime of the process (its serving threads, its ingest) has stopped
        /// answering its heartbeat.
        Unhealthy => (115_002, 503, "the process does not serve: a runtime stopped answering", "unhealthy", true),
        /// The process is shutting down (SIGTERM).
        ShuttingDown => (115_010, 503, "the process is shutting down", "shutting_down", true),
        /// The operator drains the node (`/api/drain`).
        Draining => (115_011, 503, "the node is draining", "draining", true),
        /// The node is in a mesh domain and has no view of the mesh yet.
        MeshNotJoined => (115_012, 503, "the node has not joined its mesh domain yet", "mesh_not_joined", true),
        /// A configured stream has no segment yet (`field`: the stream).
        StreamStarting => (115_013, 503, "a stream has no live segment yet", "stream_starting", true),
        /// A configured stream was live and its input delivers no new segment, or the
        /// operator paused it (`field`: the stream).
        StreamStalled => (115_014, 503, "a stream's input delivers no new segment", "stream_stalled", true),
        /// The MC's shared store (etcd) cannot be reached.
        StoreUnreachable => (115_015, 503, "the MC's shared store cannot be reached", "store_unreachable", true),
        /// The MC cuts a meeting's stream off its group's timeline and serves nobody
        /// until it follows the owner (`field`: the meeting).
        OffTimeline => (115_016, 503, "the MC is not on a meeting's group timeline", "off_timeline", true),
    }
}
