//! The serving stack: listeners and TLS ([`serve`], [`tls`]), connections and their
//! limits ([`connection`], [`conn_limits`]), the priority lanes ([`lane`]), the
//! request's context and id, the edge layer with CORS ([`edge`], [`admin_door`]), the
//! shedding and KPI layers ([`shed_layer`], [`kpi_layer`]), the head deadline, access
//! and request logs, and the extractors whose rejections answer from the code table. It
//! knows the node only through [`http_app`] and the shedder's core ([`crate::shed`]).

pub mod access_log;
pub mod admin_door;
pub mod bounded_body;
pub mod conn_limits;
pub mod connection;
pub(crate) mod connection_service;
pub mod cpu_placement;
pub mod edge;
pub mod edge_limits;
pub mod extract;
pub(crate) mod head_deadline;
pub mod header_walk;
pub mod http_app;
pub mod http_util;
pub mod kpi_layer;
pub mod lane;
pub mod request_context;
pub mod request_id;
pub(crate) mod request_log;
pub mod serve;
pub mod shed_layer;
pub mod tls;
