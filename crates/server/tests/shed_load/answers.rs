//! Reading the node's answers: HTTP/1.1 heads parsed from one reused buffer, bodies
//! dropped in the kernel, and one request-answer exchange.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads HTTP/1.1 answers one after another from a connection, keeping what arrived
/// beyond one answer for the next. Large bodies are discarded in the kernel
/// (`MSG_TRUNC`) rather than copied out, so reading a segment costs the generator a
/// few system calls, not a copy of it.
pub struct AnswerReader {
    buf: Vec<u8>,
    /// Where a kernel that ignored `MSG_TRUNC` would put discarded body bytes.
    scratch: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for AnswerReader {
    fn default() -> Self {
        AnswerReader {
            buf: vec![0; 16 * 1024],
            scratch: vec![0; 256 * 1024],
            start: 0,
            end: 0,
        }
    }
}

impl AnswerReader {
    /// The next answer's status, body length, and whether it is the back-pressure
    /// answer; `None` when the connection fails or the answer is malformed.
    pub async fn next(&mut self, s: &mut TcpStream) -> Option<(u16, usize, bool)> {
        loop {
            let available = &self.buf[self.start..self.end];
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut head = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head_len) = head.parse(available).ok()? {
                let status = head.code?;
                let length = head
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                    .unwrap_or(0usize);
                let body = &available[head_len..];
                let marker: &[u8] = b"{\"code\":109001,\"maxRetries\":";
                // The back-pressure body is small: wait for its first bytes to judge it.
                if status == 503 && body.len() < length.min(marker.len()) {
                    self.fill(s).await?;
                    continue;
                }
                let back_pressure = status == 503 && body.starts_with(marker);
                let in_buffer = body.len().min(length);
                self.start += head_len + in_buffer;
                if self.start == self.end {
                    (self.start, self.end) = (0, 0);
                }
                let mut rest = length - in_buffer;
                while rest > 0 {
                    rest -= discard(s, rest, &mut self.scratch).await?;
                }
                return Some((status, length, back_pressure));
            }
            self.fill(s).await?;
        }
    }

    /// Reads more bytes after those kept, moving them to the front first when the
    /// buffer's tail is short.
    async fn fill(&mut self, s: &mut TcpStream) -> Option<()> {
        if self.end == self.buf.len() {
            if self.start == 0 {
                return None; // an answer head larger than the buffer
            }
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        let n = s.read(&mut self.buf[self.end..]).await.ok()?;
        if n == 0 {
            return None;
        }
        self.end += n;
        Some(())
    }
}

/// Drops up to `most` bytes of the connection's input without copying them out
/// (`MSG_TRUNC` on a TCP socket); `scratch` is only there so a kernel that ignored the
/// flag would copy into valid memory. Returns how many were dropped; `None` at the end
/// of the stream or on an error.
#[allow(unsafe_code)]
async fn discard(s: &TcpStream, most: usize, scratch: &mut [u8]) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let len = most.min(scratch.len()).max(1);
    let mut one = [0u8; 1];
    let target: &mut [u8] = if scratch.is_empty() {
        &mut one
    } else {
        scratch
    };
    loop {
        s.readable().await.ok()?;
        let result = s.try_io(tokio::io::Interest::READABLE, || {
            // SAFETY: `target` is valid for writes of `len.min(target.len())` bytes;
            // with MSG_TRUNC a TCP socket writes none of them.
            let n = unsafe {
                libc::recv(
                    s.as_raw_fd(),
                    target.as_mut_ptr().cast(),
                    len.min(target.len()),
                    libc::MSG_TRUNC,
                )
            };
            usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
        });
        match result {
            Ok(0) => return None,
            Ok(n) => return Some(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return None,
        }
    }
}

/// Sends one request and reads its whole answer: status, body length, whether it is
/// the back-pressure answer; `None` on any failure.
pub async fn exchange(
    s: &mut TcpStream,
    request: &[u8],
    buf: &mut Vec<u8>,
) -> Option<(u16, usize, bool)> {
    s.write_all(request).await.ok()?;
    buf.clear();
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let mut chunk = [0u8; 8192];
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(buf.get(..head_end)?).ok()?;
    let status: u16 = head.get(9..12)?.parse().ok()?;
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut have = buf.len() - head_end;
    let body_start: Vec<u8> = buf.get(head_end..head_end + have.min(64))?.to_vec();
    let mut chunk = vec![0u8; 64 * 1024];
    while have < length {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        have += n;
    }
    let back_pressure =
        status == 503 && body_start.starts_with(b"{\"code\":109001,\"maxRetries\":");
    Some((status, length, back_pressure))
}
