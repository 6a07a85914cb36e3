//! The system's libsrt 1.5 (the reference SRT implementation), loaded at run time:
//! no build-time dependency, and a machine without it runs everything but SRT. Only
//! the calls brdyun uses are declared. Every `unsafe` block of the SRT ingest is in
//! this folder: the library and its entry points here, then the [`socket`], the
//! listen [`hook`] and the [`epoll`]; what it hands out (sockets that close on drop,
//! an epoll, the listen hook) is safe to use.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use libloading::Library;

/// The library names tried in order: Debian's OpenSSL flavour, then its GnuTLS one
/// (which Debian's ffmpeg pulls in).
pub const LIBRARY_NAMES: [&str; 2] = ["libsrt.so.1.5", "libsrt-gnutls.so.1.5"];

/// What to install when libsrt is missing (said in the error).
pub const PACKAGE_HINT: &str = "install libsrt1.5-openssl or libsrt1.5-gnutls";

/// libsrt's socket handle.
type RawSocket = i32;

/// `SRT_INVALID_SOCK` and `SRT_ERROR`.
const INVALID: i32 = -1;

/// `SRT_ASYNCRCV` (nothing to read in non-blocking mode) and `SRT_ETIMEOUT` (nothing
/// within `SRTO_RCVTIMEO`).
const ERR_AGAIN: [i32; 2] = [6002, 6003];

/// `SRT_ECONNLOST`: the peer closed or went silent past the peer idle timeout.
pub const ERR_CONNECTION_LOST: i32 = 2001;

/// The socket options brdyun sets (`SRT_SOCKOPT`).
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub enum Opt {
    /// `SRTO_RCVSYN`: blocking receive (and accept).
    RcvSyn = 2,
    /// `SRTO_RCVTIMEO`: how long a blocking receive waits, in ms.
    RcvTimeout = 14,
    /// `SRTO_LATENCY`: receive and peer latency, in ms.
    Latency = 23,
    /// `SRTO_PASSPHRASE`.
    Passphrase = 26,
    /// `SRTO_PBKEYLEN`: the AES key length in bytes.
    KeyLength = 27,
    /// `SRTO_CONNTIMEO`: how long a caller's handshake may take, in ms.
    ConnectTimeout = 36,
    /// `SRTO_RCVLATENCY`, in ms.
    RcvLatency = 43,
    /// `SRTO_STREAMID`.
    StreamId = 46,
    /// `SRTO_PAYLOADSIZE`.
    PayloadSize = 49,
    /// `SRTO_IPV6ONLY`: 0 takes IPv4 too on `[::]`.
    Ipv6Only = 54,
    /// `SRTO_PEERIDLETIMEO`: silence from the peer before the connection is broken, ms.
    PeerIdleTimeout = 55,
}

/// `SRT_SOCKSTATUS` values past which a socket is gone (broken, closing, closed,
/// non-existent).
const STATE_BROKEN: i32 = 6;

/// `SRT_EPOLL_IN`.
const EPOLL_IN: c_int = 0x1;

/// `SRT_EPOLL_ERR`.
const EPOLL_ERR: c_int = 0x8;

/// `LOG_CRIT`: libsrt writes only its critical messages to stderr; brdyun logs the
/// outcomes itself.
const LOG_CRIT: c_int = 2;

/// libsrt's statistics of one socket (`SRT_TRACEBSTATS`, `struct CBytePerfMon` of the
/// 1.5.1 header, field for field; only the receiving side's fields are read).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
#[allow(non_snake_case, missing_docs)]
pub struct TraceStats {
    pub msTimeStamp: i64,
    pub pktSentTotal: i64,
    pub pktRecvTotal: i64,
    pub pktSndLossTotal: c_int,
    pub pktRcvLossTotal: c_int,
    pub pktRetransTotal: c_int,
    pub pktSentACKTotal: c_int,
    pub pktRecvACKTotal: c_int,
    pub pktSentNAKTotal: c_int,
    pub pktRecvNAKTotal: c_int,
    pub usSndDurationTotal: i64,
    pub pktSndDropTotal: c_int,
    pub pktRcvDropTotal: c_int,
    pub pktRcvUndecryptTotal: c_int,
    pub byteSentTotal: u64,
    pub byteRecvTotal: u64,
    pub byteRcvLossTotal: u64,
    pub byteRetransTotal: u64,
    pub byteSndDropTotal: u64,
    pub byteRcvDropTotal: u64,
    pub byteRcvUndecryptTotal: u64,
    pub pktSent: i64,
    pub pktRecv: i64,
    pub pktSndLoss: c_int,
    pub pktRcvLoss: c_int,
    pub pktRetrans: c_int,
    pub pktRcvRetrans: c_int,
    pub pktSentACK: c_int,
    pub pktRecvACK: c_int,
    pub pktSentNAK: c_int,
    pub pktRecvNAK: c_int,
    pub mbpsSendRate: f64,
    pub mbpsRecvRate: f64,
    pub usSndDuration: i64,
    pub pktReorderDistance: c_int,
    pub pktRcvAvgBelatedTime: f64,
    pub pktRcvBelated: i64,
    pub pktSndDrop: c_int,
    pub pktRcvDrop: c_int,
    pub pktRcvUndecrypt: c_int,
    pub byteSent: u64,
    pub byteRecv: u64,
    pub byteRcvLoss: u64,
    pub byteRetrans: u64,
    pub byteSndDrop: u64,
    pub byteRcvDrop: u64,
    pub byteRcvUndecrypt: u64,
    pub usPktSndPeriod: f64,
    pub pktFlowWindow: c_int,
    pub pktCongestionWindow: c_int,
    pub pktFlightSize: c_int,
    pub msRTT: f64,
    pub mbpsBandwidth: f64,
    pub byteAvailSndBuf: c_int,
    pub byteAvailRcvBuf: c_int,
    pub mbpsMaxBW: f64,
    pub byteMSS: c_int,
    pub pktSndBuf: c_int,
    pub byteSndBuf: c_int,
    pub msSndBuf: c_int,
    pub msSndTsbPdDelay: c_int,
    pub pktRcvBuf: c_int,
    pub byteRcvBuf: c_int,
    pub msRcvBuf: c_int,
    pub msRcvTsbPdDelay: c_int,
    pub pktSndFilterExtraTotal: c_int,
    pub pktRcvFilterExtraTotal: c_int,
    pub pktRcvFilterSupplyTotal: c_int,
    pub pktRcvFilterLossTotal: c_int,
    pub pktSndFilterExtra: c_int,
    pub pktRcvFilterExtra: c_int,
    pub pktRcvFilterSupply: c_int,
    pub pktRcvFilterLoss: c_int,
    pub pktReorderTolerance: c_int,
    pub pktSentUniqueTotal: i64,
    pub pktRecvUniqueTotal: i64,
    pub byteSentUniqueTotal: u64,
    pub byteRecvUniqueTotal: u64,
    pub pktSentUnique: i64,
    pub pktRecvUnique: i64,
    pub byteSentUnique: u64,
    pub byteRecvUnique: u64,
}

/// `srt_listen_callback_fn`.
type ListenFn = unsafe extern "C" fn(
    opaque: *mut c_void,
    ns: RawSocket,
    hs_version: c_int,
    peer: *const libc::sockaddr,
    stream_id: *const c_char,
) -> c_int;

/// `srt_getsockname` and `srt_getpeername`.
type NameFn = unsafe extern "C" fn(RawSocket, *mut libc::sockaddr, *mut c_int) -> c_int;

/// `srt_epoll_wait`: ready SRT sockets for reading and writing, the timeout, ready
/// system sockets for reading and writing.
type EpollWaitFn = unsafe extern "C" fn(
    c_int,
    *mut RawSocket,
    *mut c_int,
    *mut RawSocket,
    *mut c_int,
    i64,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
) -> c_int;

/// The entry points, resolved once.
struct Api {
    create_socket: unsafe extern "C" fn() -> RawSocket,
    setsockflag: unsafe extern "C" fn(RawSocket, c_int, *const c_void, c_int) -> c_int,
    getsockflag: unsafe extern "C" fn(RawSocket, c_int, *mut c_void, *mut c_int) -> c_int,
    bind: unsafe extern "C" fn(RawSocket, *const libc::sockaddr, c_int) -> c_int,
    listen: unsafe extern "C" fn(RawSocket, c_int) -> c_int,
    listen_callback: unsafe extern "C" fn(RawSocket, ListenFn, *mut c_void) -> c_int,
    setrejectreason: unsafe extern "C" fn(RawSocket, c_int) -> c_int,
    accept: unsafe extern "C" fn(RawSocket, *mut libc::sockaddr, *mut c_int) -> RawSocket,
    connect: unsafe extern "C" fn(RawSocket, *const libc::sockaddr, c_int) -> c_int,
    recvmsg: unsafe extern "C" fn(RawSocket, *mut c_char, c_int) -> c_int,
    bstats: unsafe extern "C" fn(RawSocket, *mut TraceStats, c_int) -> c_int,
    close: unsafe extern "C" fn(RawSocket) -> c_int,
    getsockname: NameFn,
    getpeername: NameFn,
    getsockstate: unsafe extern "C" fn(RawSocket) -> c_int,
    getrejectreason: unsafe extern "C" fn(RawSocket) -> c_int,
    getlasterror: unsafe extern "C" fn(*mut c_int) -> c_int,
    getlasterror_str: unsafe extern "C" fn() -> *const c_char,
    epoll_create: unsafe extern "C" fn() -> c_int,
    epoll_add_usock: unsafe extern "C" fn(c_int, RawSocket, *const c_int) -> c_int,
    epoll_add_ssock: unsafe extern "C" fn(c_int, c_int, *const c_int) -> c_int,
    epoll_wait: EpollWaitFn,
    epoll_release: unsafe extern "C" fn(c_int) -> c_int,
    /// Kept loaded for the process's life: the function pointers point into it.
    _library: Library,
}

/// An SRT call's failure: libsrt's code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (srt error {code})")]
pub struct SrtError {
    /// libsrt's error code (`SRT_ERRNO`).
    pub code: i32,
    /// libsrt's message.
    pub message: String,
}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// Open until the process exits: every call into libsrt holds it for reading, and an
/// exit handler closes it (waiting for the calls in flight, none of which blocks longer
/// than a receive's or an epoll's timeout; a caller's connect is the exception, bounded
/// by its connect timeout). libsrt's own static destructor, which frees its sockets, so
/// runs with no thread of brdyun inside libsrt.
static GATE: RwLock<bool> = RwLock::new(true);

/// The loaded library, while the gate is open.
struct Entered {
    api: &'static Api,
    _gate: RwLockReadGuard<'static, bool>,
}

impl std::ops::Deref for Entered {
    type Target = Api;
    fn deref(&self) -> &Api {
        self.api
    }
}

fn enter() -> Result<Entered, SrtError> {
    let api = api().map_err(|message| SrtError { code: -1, message })?;
    let gate = GATE.read().unwrap_or_else(PoisonError::into_inner);
    if !*gate {
        return Err(closing());
    }
    Ok(Entered { api, _gate: gate })
}

fn try_enter() -> Option<Entered> {
    let api = api().ok()?;
    let gate = GATE.try_read().ok()?;
    (*gate).then_some(Entered { api, _gate: gate })
}

/// The code of [`closing`]'s error.
const EXITING: i32 = -2;

fn closing() -> SrtError {
    SrtError {
        code: EXITING,
        message: "the process is exiting".into(),
    }
}

impl SrtError {
    /// Whether the call failed because the process is exiting (libsrt is being shut
    /// down), not because of libsrt or the peer.
    pub fn is_exiting(&self) -> bool {
        self.code == EXITING
    }
}

/// Registered with `atexit` once libsrt is loaded: runs before libsrt's destructor.
extern "C" fn close_gate() {
    *GATE.write().unwrap_or_else(PoisonError::into_inner) = false;
}

/// Loads libsrt (once) and starts it.
///
/// # Errors
/// Why libsrt cannot be used, naming the package to install.
pub fn load() -> Result<(), String> {
    api().map(|_| ())
}

fn api() -> Result<&'static Api, String> {
    API.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn open() -> Result<Api, String> {
    let mut tried = Vec::new();
    for name in LIBRARY_NAMES {
        // SAFETY: loading libsrt runs its initialisers, which only set up its own
        // globals (logging, the socket table); it is a C library with no load-time
        // requirement on the caller.
        match unsafe { Library::new(name) } {
            Ok(library) => return resolve(library).map_err(|e| format!("{name}: {e}")),
            Err(e) => tried.push(format!("{name}: {e}")),
        }
    }
    Err(format!(
        "libsrt 1.5 not found ({}); {PACKAGE_HINT}",
        tried.join("; ")
    ))
}

fn resolve(library: Library) -> Result<Api, libloading::Error> {
    // SAFETY: each symbol is looked up by its libsrt 1.5 name and given the signature
    // of its declaration in srt.h 1.5.1 (SRTSOCKET = int32_t, SRT_SOCKOPT = int, the
    // sockaddr and stats pointers as declared); the pointers stay valid because
    // `library` is kept in the `Api` they are stored in, which lives in a static.
    unsafe {
        let startup: unsafe extern "C" fn() -> c_int = *library.get(b"srt_startup\0")?;
        let setloglevel: unsafe extern "C" fn(c_int) = *library.get(b"srt_setloglevel\0")?;
        let api = Api {
            create_socket: *library.get(b"srt_create_socket\0")?,
            setsockflag: *library.get(b"srt_setsockflag\0")?,
            getsockflag: *library.get(b"srt_getsockflag\0")?,
            bind: *library.get(b"srt_bind\0")?,
            listen: *library.get(b"srt_listen\0")?,
            listen_callback: *library.get(b"srt_listen_callback\0")?,
            setrejectreason: *library.get(b"srt_setrejectreason\0")?,
            accept: *library.get(b"srt_accept\0")?,
            connect: *library.get(b"srt_connect\0")?,
            recvmsg: *library.get(b"srt_recvmsg\0")?,
            bstats: *library.get(b"srt_bstats\0")?,
            close: *library.get(b"srt_close\0")?,
            getsockname: *library.get(b"srt_getsockname\0")?,
            getpeername: *library.get(b"srt_getpeername\0")?,
            getsockstate: *library.get(b"srt_getsockstate\0")?,
            getrejectreason: *library.get(b"srt_getrejectreason\0")?,
            getlasterror: *library.get(b"srt_getlasterror\0")?,
            getlasterror_str: *library.get(b"srt_getlasterror_str\0")?,
            epoll_create: *library.get(b"srt_epoll_create\0")?,
            epoll_add_usock: *library.get(b"srt_epoll_add_usock\0")?,
            epoll_add_ssock: *library.get(b"srt_epoll_add_ssock\0")?,
            epoll_wait: *library.get(b"srt_epoll_wait\0")?,
            epoll_release: *library.get(b"srt_epoll_release\0")?,
            _library: library,
        };
        // srt_startup is idempotent (reference counted); it is called once here and
        // srt_cleanup never, so libsrt lives as long as the process.
        startup();
        setloglevel(LOG_CRIT);
        // Registered after libsrt's static objects, so it runs before their
        // destructors at exit (handlers run in reverse order).
        libc::atexit(close_gate);
        Ok(api)
    }
}

/// The calling thread's last libsrt error.
fn last_error(api: &Api) -> SrtError {
    // SAFETY: both calls read libsrt's thread-local error; a null errno pointer is
    // allowed, and the message is a NUL-terminated string owned by libsrt that stays
    // valid until the next SRT call on this thread (it is copied at once).
    unsafe {
        let code = (api.getlasterror)(std::ptr::null_mut());
        let text = (api.getlasterror_str)();
        let message = if text.is_null() {
            String::new()
        } else {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        };
        SrtError { code, message }
    }
}

fn check(api: &Api, result: c_int) -> Result<(), SrtError> {
    if result == INVALID {
        Err(last_error(api))
    } else {
        Ok(())
    }
}

/// A socket address as a `sockaddr_storage` and its length.
fn to_sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, c_int) {
    // SAFETY: sockaddr_storage is plain old data; all zeroes is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&raw mut storage).cast::<libc::sockaddr_in>(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast::<libc::sockaddr_in6>(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as c_int)
}

/// The address at `addr`, if it is IPv4 or IPv6.
///
/// # Safety
/// `addr` is null or points to a sockaddr whose family field tells its real size.
unsafe fn from_sockaddr(addr: *const libc::sockaddr) -> Option<SocketAddr> {
    if addr.is_null() {
        return None;
    }
    // SAFETY: the caller's promise: the family says which struct it is.
    unsafe {
        match c_int::from((*addr).sa_family) {
            libc::AF_INET => {
                let sin = std::ptr::read_unaligned(addr.cast::<libc::sockaddr_in>());
                let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 => {
                let sin6 = std::ptr::read_unaligned(addr.cast::<libc::sockaddr_in6>());
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                let v6 = SocketAddrV6::new(
                    ip,
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                );
                Some(match ip.to_ipv4_mapped() {
                    Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
                    None => SocketAddr::V6(v6),
                })
            }
            _ => None,
        }
    }
}

mod epoll;
mod hook;
mod socket;

pub use epoll::Epoll;
pub use hook::{Handshake, HookSlot, ListenHook, REJECT_INTERNAL};
pub use socket::{close_raw, reject_reason, state, Socket, SocketState};

#[cfg(test)]
mod tests {
    use super::*;

    /// At exit the gate's writer (the exit handler) waits for the calls in flight;
    /// a passphrase set in the listen callback meanwhile must not wait behind it (a
    /// waiting writer blocks new readers: libsrt's thread would deadlock with exit).
    #[test]
    fn setting_a_passphrase_never_waits_for_a_closing_gate() {
        load().expect("libsrt 1.5 (apt install libsrt1.5-openssl)");
        let in_flight = GATE.read().unwrap_or_else(PoisonError::into_inner);
        let closer = std::thread::spawn(|| {
            // The exit handler's lock, left open: the test only makes it wait.
            drop(GATE.write().unwrap_or_else(PoisonError::into_inner));
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // A reader is refused once the writer waits.
        while GATE.try_read().is_ok() {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer never waited"
            );
            std::thread::yield_now();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let handshake = Handshake {
                socket: -1,
                peer: "127.0.0.1:9".parse().unwrap(),
                stream_id: None,
            };
            let _ = tx.send(handshake.set_passphrase(b"a-long-passphrase"));
        });
        let result = rx.recv_timeout(Duration::from_secs(5));
        drop(in_flight);
        closer.join().expect("closer");
        let error = result.expect("set_passphrase waited for the gate");
        assert!(error.expect_err("the gate is closing").is_exiting());
    }

    /// The layout of `SRT_TRACEBSTATS` in the libsrt 1.5.1 header, as a C program
    /// compiled against it printed (`sizeof` and `offsetof`).
    #[test]
    fn trace_stats_match_the_c_layout() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<TraceStats>(), 496);
        assert_eq!(offset_of!(TraceStats, msTimeStamp), 0);
        assert_eq!(offset_of!(TraceStats, pktRecvTotal), 16);
        assert_eq!(offset_of!(TraceStats, pktRcvLossTotal), 28);
        assert_eq!(offset_of!(TraceStats, pktRcvDropTotal), 68);
        assert_eq!(offset_of!(TraceStats, pktRcvUndecryptTotal), 72);
        assert_eq!(offset_of!(TraceStats, byteRecvTotal), 88);
        assert_eq!(offset_of!(TraceStats, pktRecv), 144);
        assert_eq!(offset_of!(TraceStats, pktRcvRetrans), 164);
        assert_eq!(offset_of!(TraceStats, mbpsRecvRate), 192);
        assert_eq!(offset_of!(TraceStats, msRTT), 328);
        assert_eq!(offset_of!(TraceStats, pktRecvUniqueTotal), 440);
        assert_eq!(offset_of!(TraceStats, byteRecvUnique), 488);
    }

    #[test]
    fn addresses_convert_both_ways() {
        for addr in ["127.0.0.1:9000", "[::1]:9001"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let (storage, _) = to_sockaddr(addr);
            // SAFETY: `to_sockaddr` wrote a sockaddr of the family it names.
            let back = unsafe { from_sockaddr((&raw const storage).cast()) };
            assert_eq!(back, Some(addr));
        }
    }
}
