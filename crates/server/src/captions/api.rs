//! The caption API (placeholder replaced below).
