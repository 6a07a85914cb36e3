//! The MC API's OpenAPI 3.0 document, served at `/api/openapi.json`.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The document (kept next to the handlers it describes; a test checks it parses and
/// names every route).
pub const DOCUMENT: &str = r##"{
  "openapi": "3.0.3",
  "info": {
    "title": "brdyun MC meeting API",
    "version": "1",
    "description": "Meetings on a brdyun MC. Errors are {\"code\": N, \"message\": \"...\"}; every code is listed in docs/codes.md. Clients may state their version in X-Brdyun-Client-Version. Bodies are application/json (else 108012); a browser page of another origin is refused (108013) and no answer carries a CORS grant."
  },
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "parameters": {
      "id": {"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}},
      "clientVersion": {"name": "X-Brdyun-Client-Version", "in": "header", "required": false, "schema": {"type": "string", "example": "2.1.0.456"}}
    },
    "schemas": {
      "Error": {"type": "object", "required": ["code", "message"], "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "field": {"type": "string"}}},
      "NewMeeting": {"type": "object", "required": ["id"], "additionalProperties": false, "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "viewer_limit": {"type": "integer", "nullable": true, "minimum": 0}, "private": {"type": "boolean"}, "recording_depth_days": {"type": "integer", "nullable": true, "minimum": 1, "maximum": 36500}, "languages": {"type": "array", "maxItems": 8, "items": {"$ref": "#/components/schemas/MeetingLanguage"}}}},
      "MeetingLanguage": {"type": "object", "required": ["code"], "additionalProperties": false, "properties": {"code": {"type": "string", "pattern": "^[A-Za-z]{3}$"}, "name": {"type": "string", "maxLength": 64}, "pid": {"type": "integer", "minimum": 16, "maximum": 8190}, "interpreter": {"type": "boolean"}, "offset_ms": {"type": "integer", "minimum": -30000, "maximum": 30000}}},
      "MeetingView": {"type": "object", "properties": {"id": {"type": "string"}, "state": {"type": "string", "enum": ["created", "live", "closed"]}, "locked": {"type": "boolean"}, "viewer_limit": {"type": "integer", "nullable": true}, "viewers": {"type": "integer"}}},
      "Meeting": {"type": "object", "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "state": {"type": "string", "enum": ["created", "live", "closed"]}, "locked": {"type": "boolean"}, "viewer_limit": {"type": "integer", "nullable": true}, "stream_key": {"type": "string"}, "host_token": {"type": "string"}, "created_ms": {"type": "integer"}, "started_ms": {"type": "integer", "nullable": true}, "closed_ms": {"type": "integer", "nullable": true}, "languages": {"type": "array", "items": {"$ref": "#/components/schemas/MeetingLanguage"}}, "interpreter_keys": {"type": "object", "description": "the key each interpreter publishes <id>@audio-<code> with, by code", "additionalProperties": {"type": "string"}}}}
    },
    "responses": {
      "Error": {"description": "a refusal with its code", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  },
  "paths": {
    "/api/meetings": {
      "post": {"summary": "create a meeting (admin token); 102004 if the id exists, 102011 for an old client", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/clientVersion"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewMeeting"}}}},
        "responses": {"201": {"description": "created, with stream_key and host_token", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Meeting"}}}}, "default": {"$ref": "#/components/responses/Error"}}},
      "get": {"summary": "list meetings (admin or node token)", "security": [{"bearer": []}],
        "responses": {"200": {"description": "every meeting", "content": {"application/json": {"schema": {"type": "object", "properties": {"meetings": {"type": "array", "items": {"$ref": "#/components/schemas/MeetingView"}}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/meetings/{id}": {
      "get": {"summary": "a meeting: public view, or with secrets for its host or an admin; 104005 if unknown",
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"200": {"description": "the meeting", "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/MeetingView"}, {"$ref": "#/components/schemas/Meeting"}]}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/meetings/{id}/{action}": {
      "post": {"summary": "start, lock, unlock or close (host token of the meeting, or admin); 103003 once closed, 16 for an old client", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}, {"$ref": "#/components/parameters/clientVersion"}, {"name": "action", "in": "path", "required": true, "schema": {"type": "string", "enum": ["start", "lock", "unlock", "close"]}}],
        "responses": {"200": {"description": "the meeting afterwards", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Meeting"}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/meetings/{id}/viewer-limit": {
      "put": {"summary": "set or clear the viewer limit across all nodes (host or admin)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}, {"$ref": "#/components/parameters/clientVersion"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["viewer_limit"], "properties": {"viewer_limit": {"type": "integer", "nullable": true, "minimum": 0}}}}}},
        "responses": {"200": {"description": "the meeting afterwards", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Meeting"}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/meetings/{id}/captions": {
      "post": {"summary": "cues for the meeting's subtitles, placed on its timeline at the MC (host or admin); codes 112001-112009, see docs/captions.md", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["language", "cues"], "properties": {"language": {"type": "string", "example": "pt-BR"}, "name": {"type": "string", "maxLength": 64}, "cues": {"type": "array", "minItems": 1, "maxItems": 20, "items": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string", "maxLength": 300}, "duration_ms": {"type": "integer", "minimum": 100, "maximum": 60000, "default": 3000}, "offset_ms": {"type": "integer", "minimum": 0, "maximum": 30000}, "at_ms": {"type": "integer", "description": "PROGRAM-DATE-TIME, Unix ms (instead of offset_ms)"}}}}}}}}},
        "responses": {"201": {"description": "where each cue landed", "content": {"application/json": {"schema": {"type": "object", "properties": {"track": {"type": "object", "properties": {"id": {"type": "string"}, "language": {"type": "string"}, "name": {"type": "string"}}}, "cues": {"type": "array", "items": {"type": "object", "properties": {"start_pts": {"type": "integer"}, "start_ms": {"type": "integer"}, "end_ms": {"type": "integer"}, "start": {"type": "string", "format": "date-time"}}}}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/meetings/{id}/recordings": {
      "get": {"summary": "the meeting's recordings on object storage (host or admin): each recorded rendition, its objects and bytes, its periods with catch-up URLs playable on any node with the store; store null when the MC has no [recordings]; 104005 if unknown, see docs/recordings.md", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"200": {"description": "the recordings", "content": {"application/json": {"schema": {"type": "object", "properties": {"meeting": {"type": "string"}, "store": {"type": "string", "nullable": true}, "renditions": {"type": "array", "items": {"type": "object", "properties": {"rendition": {"type": "string"}, "prefix": {"type": "string"}, "objects": {"type": "integer"}, "bytes": {"type": "integer"}, "where": {"type": "string", "enum": ["store"]}, "periods": {"type": "array", "items": {"type": "object", "properties": {"from_ms": {"type": "integer"}, "to_ms": {"type": "integer"}, "first_msn": {"type": "integer"}, "last_msn": {"type": "integer"}, "segments": {"type": "integer"}, "urls": {"type": "object", "properties": {"hls": {"type": "string"}, "dash": {"type": "string"}, "mp4": {"type": "string"}, "mp4_progressive": {"type": "string"}, "ts": {"type": "string"}}}}}}}}}, "recording": {"type": "object", "nullable": true, "description": "the whole recording's files (null when nothing is recorded)", "properties": {"hls": {"type": "string"}, "dash": {"type": "string"}, "mp4": {"type": "string"}, "mp4_progressive": {"type": "string"}, "ts": {"type": "string"}}}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/meetings/{id}/viewer-tokens": {
      "post": {"summary": "a viewer token (EdDSA JWT) for a private meeting, signed with the MC's key (host or admin); 113020 for a bad request, see docs/private-meetings.md", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["viewer"], "properties": {"viewer": {"type": "string", "maxLength": 128}, "ttl_seconds": {"type": "integer", "minimum": 60, "maximum": 604800, "default": 14400}, "max_sessions": {"type": "integer", "minimum": 1}}}}}},
        "responses": {"201": {"description": "the token", "content": {"application/json": {"schema": {"type": "object", "properties": {"token": {"type": "string"}, "expires": {"type": "integer", "description": "Unix seconds"}, "kid": {"type": "string"}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/meetings/{id}/viewers/{viewer}": {
      "delete": {"summary": "the host removes a viewer of a private meeting: every node refuses its session after its next sync (host or admin)", "security": [{"bearer": []}],
        "parameters": [{"$ref": "#/components/parameters/id"}, {"name": "viewer", "in": "path", "required": true, "schema": {"type": "string", "maxLength": 128}}],
        "responses": {"200": {"description": "the removed viewers", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}, "removed_viewers": {"type": "array", "items": {"type": "string"}}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/api/nodes/sync": {
      "get": {"summary": "a node reports its viewers per meeting and gets every meeting (node token as bearer); a report outside the bounds is 108007 naming node or viewers, see docs/meetings.md", "security": [{"bearer": []}],
        "parameters": [{"name": "node", "in": "query", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$"}}, {"name": "viewers", "in": "query", "required": false, "schema": {"type": "string", "maxLength": 299008, "example": "m1:3,m2:0"}, "description": "id:count pairs, at most 4096, each id once, each count at most 1000000"}],
        "responses": {"200": {"description": "meetings with viewers summed over nodes, and the keys of viewer tokens", "content": {"application/json": {"schema": {"type": "object", "properties": {"now_ms": {"type": "integer"}, "min_client_version": {"type": "string", "nullable": true}, "meetings": {"type": "array", "items": {"$ref": "#/components/schemas/MeetingView"}}, "viewer_keys": {"type": "array", "items": {"type": "object", "properties": {"kid": {"type": "string"}, "public": {"type": "string"}}}}}}}}}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/{id}/mpegts": {
      "get": {"summary": "the meeting's stream as one endless MPEG-TS (what nodes pull)", "parameters": [{"$ref": "#/components/parameters/id"}],
        "responses": {"200": {"description": "video/mp2t"}, "default": {"$ref": "#/components/responses/Error"}}}
    }
  }
}"##;

/// `GET /api/openapi.json`.
pub async fn document() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT).into_response()
}
