//! The URL of an RTMP(S) pull input: `rtmp[s]://host[:port]/app[/…]/stream[?query]`.
//!
//! The application is every path segment but the last, the stream name the last one
//! with the query (a platform's play key travels there, as in a publish URL). Pure, so
//! the `rtmp_pull_url` fuzz target drives it.

use thiserror::Error;

/// The default port of `rtmp://`.
pub const RTMP_PORT: u16 = 1935;
/// The default port of `rtmps://` (what platforms use: it passes firewalls).
pub const RTMPS_PORT: u16 = 443;

/// A parsed pull URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullUrl {
    /// `rtmps://`: RTMP inside TLS.
    pub tls: bool,
    /// The host name or IP address (IPv6 without brackets).
    pub host: String,
    /// The TCP port.
    pub port: u16,
    /// The application (`connect`'s `app`).
    pub app: String,
    /// The name given to `play`, with its query.
    pub stream: String,
}

/// Why a pull URL is not usable.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PullUrlError {
    /// Not `rtmp://` or `rtmps://`.
    #[error("not an rtmp:// or rtmps:// url")]
    Scheme,
    /// No host, or a port that is not a number from 1 to 65535.
    #[error("the host or port is missing or invalid")]
    Authority,
    /// No application or no stream name in the path.
    #[error("the path must be /app/stream")]
    Path,
}

impl PullUrl {
    /// Parses `url`.
    ///
    /// # Errors
    /// The [`PullUrlError`] of the part that is wrong.
    pub fn parse(url: &str) -> Result<Self, PullUrlError> {
        let (tls, rest) = if let Some(rest) = url.strip_prefix("rtmps://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("rtmp://") {
            (false, rest)
        } else {
            return Err(PullUrlError::Scheme);
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        // User info is not sent anywhere: drop it.
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = split_host_port(authority)?;
        let port = match port {
            Some(port) => port,
            None if tls => RTMPS_PORT,
            None => RTMP_PORT,
        };
        let (path, query) = match path.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (path, None),
        };
        let path = path.trim_matches('/');
        let (app, name) = path.rsplit_once('/').ok_or(PullUrlError::Path)?;
        let app = app.trim_matches('/');
        if app.is_empty() || name.is_empty() {
            return Err(PullUrlError::Path);
        }
        let stream = match query {
            Some(query) if !query.is_empty() => format!("{name}?{query}"),
            _ => name.to_owned(),
        };
        Ok(PullUrl {
            tls,
            host: host.to_owned(),
            port,
            app: app.to_owned(),
            stream,
        })
    }

    /// The `tcUrl` of `connect`: the URL up to the application.
    pub fn tc_url(&self) -> String {
        let scheme = if self.tls { "rtmps" } else { "rtmp" };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{host}:{}/{}", self.port, self.app)
    }
}

fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), PullUrlError> {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or(PullUrlError::Authority)?;
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(after.strip_prefix(':').ok_or(PullUrlError::Authority)?),
            ),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host.contains(['[', ']', ' ']) {
        return Err(PullUrlError::Authority);
    }
    let port = match port {
        Some(port) => match port.parse::<u16>() {
            Ok(port) if port > 0 => Some(port),
            _ => return Err(PullUrlError::Authority),
        },
        None => None,
    };
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_is_the_path_but_the_last_segment_and_the_query_stays_with_the_stream() {
        let url =
            PullUrl::parse("rtmps://user:pw@ingest.example.net/live/app2/room?key=a%3Db").unwrap();
        assert_eq!(
            url,
            PullUrl {
                tls: true,
                host: "ingest.example.net".into(),
                port: 443,
                app: "live/app2".into(),
                stream: "room?key=a%3Db".into(),
            }
        );
        assert_eq!(url.tc_url(), "rtmps://ingest.example.net:443/live/app2");
        let url = PullUrl::parse("rtmp://[::1]:19350/live/x").unwrap();
        assert_eq!(
            (url.host.as_str(), url.port, url.tls),
            ("::1", 19350, false)
        );
        assert_eq!(url.tc_url(), "rtmp://[::1]:19350/live");
        assert_eq!(PullUrl::parse("rtmp://h/live/x").unwrap().port, 1935);
    }

    #[test]
    fn broken_urls_are_refused_with_the_part_that_is_wrong() {
        for (url, error) in [
            ("http://h/live/x", PullUrlError::Scheme),
            ("rtmp:///live/x", PullUrlError::Authority),
            ("rtmp://h:0/live/x", PullUrlError::Authority),
            ("rtmp://h:99999/live/x", PullUrlError::Authority),
            ("rtmp://[::1/live/x", PullUrlError::Authority),
            ("rtmp://h/live", PullUrlError::Path),
            ("rtmp://h/live/", PullUrlError::Path),
            ("rtmp://h", PullUrlError::Path),
            ("rtmp://h?key=1", PullUrlError::Path),
        ] {
            assert_eq!(PullUrl::parse(url), Err(error), "{url}");
        }
    }
}
