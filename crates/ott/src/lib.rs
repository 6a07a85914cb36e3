//! Pure decisions of OTT/DVR redundancy (requirements §3, OTT-*): given a snapshot of
//! the mesh as plain values, what should this node do? No I/O, no tokio, no clock
//! reads: time is passed in as Unix milliseconds.
//!
//! Data flow, per request, in the HTTP layer that uses this crate:
//!
//! 1. the `mesh` crate keeps a [`Snapshot`] (nodes, members, minimum version);
//! 2. a viewer's [`ViewerContext`] comes from the connection (peer address, TLS) and
//!    `X-Forwarded-Proto` (OTT-ADDR-4), its [`PlayerKind`] from the User-Agent
//!    (OTT-PLAY-1);
//! 3. master playlist: [`backups_for_viewer`] picks up to two eligible backups
//!    ([`eligible`], OTT-ELIG-1..5) by rendezvous hashing ([`choose_backups`],
//!    OTT-GRP-2), at an address the viewer may use ([`backup_address`],
//!    OTT-ADDR-1..5); [`master_variants`] lists own variants then the backups' with
//!    a [`Pass`] each (OTT-PROT-1);
//! 4. stream not working here: [`redirect_target`] (OTT-PROT-2); catch-up period not
//!    held here: [`archive_target`] (OTT-PROT-3, OTT-ARCH-1/2);
//! 5. a viewer arriving with a pass: [`KeyRing::verify`] (OTT-GRP-3), then
//!    [`admit_backup_viewer`] (OTT-OVL-1/2).
//!
//! 6. a viewer entering by `/watch/{group}`: [`entry_target`], any node that serves it,
//!    this one included;
//! 7. a switching player's steering request: [`steer`] orders its pathways from the
//!    snapshot (RFC 8216bis §7);
//! 8. a viewer of a private meeting: its platform-signed token, [`ViewerKeySet::verify`].
//!
//! In the background, every tick: [`group_report`] per group for the Backups screen
//! (OTT-OPS-1) and [`AlertState::update`] for alerts 70, 78, 79 (OTT-OPS-3).

mod address;
mod alert;
mod balance;
pub mod base64url;
mod eligibility;
mod entry;
mod overload;
mod pass;
pub mod player;
mod problem;
mod report;
mod route;
mod session;
mod steering;
mod variants;
mod view;
mod viewer_token;

pub use address::{backup_address, is_public_ip, mark_shared_names, ViewerContext};
pub use alert::{
    AlertChange, AlertCode, AlertKey, AlertKind, AlertState, Observations, REFUSAL_GAP_MS,
};
pub use balance::{
    choose_backup_indices, choose_backup_indices_by, choose_backup_indices_keyed, choose_backups,
    rendezvous_weight, stable_hash, NodeKey, SessionDigest, StableHasher,
};
pub use eligibility::{
    eligibility_problems, eligible, live_window_age_ms, servable_problems, LIVE_WINDOW_MAX_AGE_MS,
    MAX_BITRATE_RATIO_PERMILLE, MAX_CLOCK_SKEW_MS, SILENT_AFTER_MS,
};
pub use entry::{entry_target, Entry};
pub use overload::{admit_backup_viewer, overload, Admit, Overload};
pub use pass::{
    KeyRing, Pass, PassError, ViewKey, MASTER_PASS_LIFETIME_MS, PASS_CLOCK_TOLERANCE_MS,
    PASS_QUERY_PARAM, REDIRECT_PASS_LIFETIME_MS,
};
pub use player::PlayerKind;
pub use problem::Problem;
pub use report::{group_report, GroupReport, GroupState, MemberRow};
pub use route::{
    archive_target, backup_candidates, backups_for_viewer, eligible_backups, pick_backups,
    redirect_target, ArchiveDecision, NoTarget, Target,
};
pub use session::{
    address_prefix, viewer_hash, Session, SessionClaims, SessionError, SessionKey, SessionKeys,
    SESSION_MEDIA_LIFETIME_S, SESSION_QUERY_PARAM, SESSION_RENEW_MAX_S, SESSION_TEXT_LEN,
};
pub use steering::{
    is_pathway_id, parse_pathways, pathway_id, steer, steering_uri, PathwayListError,
    PathwayVerdict, Steering, SteeringManifest, MAX_PATHWAYS, STEERING_TTL_S,
};
pub use variants::{backup_uri, encode_segment, master_variants, BackupLink};
pub use view::{
    Announced, ArchiveRanges, Load, MemberView, NodeId, NodeView, Protocol, Rung, Scheme, Snapshot,
    Thresholds, Transport, Version, VersionError,
};
pub use viewer_token::{
    mint as mint_viewer_token, TokenError, ViewerClaims, ViewerKey, ViewerKeySet,
    CLOCK_LEEWAY_S as VIEWER_TOKEN_LEEWAY_S,
};
