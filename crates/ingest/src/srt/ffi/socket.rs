//! One SRT socket (closed when dropped) and what libsrt says of a socket by its id.

use super::*;

/// One SRT socket, closed when dropped.
#[derive(Debug)]
pub struct Socket {
    id: RawSocket,
}

impl Socket {
    /// A new socket (live mode, libsrt's defaults).
    ///
    /// # Errors
    /// libsrt missing, or its error.
    pub fn new() -> Result<Self, SrtError> {
        let api = enter()?;
        // SAFETY: srt_create_socket takes nothing and returns a handle or -1.
        let id = unsafe { (api.create_socket)() };
        if id == INVALID {
            return Err(last_error(&api));
        }
        Ok(Self { id })
    }

    /// libsrt's id of this socket (the key a listen hook's decision is found by).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// Sets an integer option.
    ///
    /// # Errors
    /// libsrt's.
    pub fn set_int(&self, opt: Opt, value: i32) -> Result<(), SrtError> {
        set_int(self.id, opt, value)
    }

    /// Sets a boolean option.
    ///
    /// # Errors
    /// libsrt's.
    pub fn set_bool(&self, opt: Opt, value: bool) -> Result<(), SrtError> {
        let api = enter()?;
        let value = u8::from(value);
        // SAFETY: libsrt reads a bool (one byte) from the pointer, valid for the call.
        let result =
            unsafe { (api.setsockflag)(self.id, opt as c_int, (&raw const value).cast(), 1) };
        check(&api, result)
    }

    /// Sets a string option (streamid, passphrase).
    ///
    /// # Errors
    /// libsrt's (a passphrase outside 10–79 bytes, a streamid over 512).
    pub fn set_bytes(&self, opt: Opt, value: &[u8]) -> Result<(), SrtError> {
        set_bytes(self.id, opt, value)
    }

    /// Reads an integer option.
    ///
    /// # Errors
    /// libsrt's.
    pub fn get_int(&self, opt: Opt) -> Result<i32, SrtError> {
        let api = enter()?;
        let mut value: c_int = 0;
        let mut len = std::mem::size_of::<c_int>() as c_int;
        // SAFETY: libsrt writes at most `len` bytes to `value`, both valid for the call.
        let result = unsafe {
            (api.getsockflag)(self.id, opt as c_int, (&raw mut value).cast(), &raw mut len)
        };
        check(&api, result).map(|()| value)
    }

    /// Binds to `addr`.
    ///
    /// # Errors
    /// libsrt's (the port in use, ...).
    pub fn bind(&self, addr: SocketAddr) -> Result<(), SrtError> {
        let api = enter()?;
        let (storage, len) = to_sockaddr(addr);
        // SAFETY: the address is valid for `len` bytes for the call.
        let result = unsafe { (api.bind)(self.id, (&raw const storage).cast(), len) };
        check(&api, result)
    }

    /// The bound address.
    ///
    /// # Errors
    /// libsrt's.
    pub fn local_addr(&self) -> Result<SocketAddr, SrtError> {
        self.name(true)
    }

    /// The peer's address.
    ///
    /// # Errors
    /// libsrt's.
    pub fn peer_addr(&self) -> Result<SocketAddr, SrtError> {
        self.name(false)
    }

    fn name(&self, local: bool) -> Result<SocketAddr, SrtError> {
        let api = enter()?;
        // SAFETY: all zeroes is a valid sockaddr_storage.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as c_int;
        let get = if local {
            api.getsockname
        } else {
            api.getpeername
        };
        // SAFETY: libsrt writes at most `len` bytes of address into `storage`.
        let result = unsafe { get(self.id, (&raw mut storage).cast(), &raw mut len) };
        check(&api, result)?;
        // SAFETY: libsrt wrote a sockaddr of the family it names.
        unsafe { from_sockaddr((&raw const storage).cast()) }.ok_or(SrtError {
            code: -1,
            message: "not an IP address".into(),
        })
    }

    /// Listens, with libsrt answering inductions itself and `hook` deciding each
    /// conclusion.
    ///
    /// # Errors
    /// libsrt's.
    pub fn listen(&self, backlog: i32, hook: &'static HookSlot) -> Result<(), SrtError> {
        let api = enter()?;
        let opaque = std::ptr::from_ref(hook).cast_mut().cast::<c_void>();
        // SAFETY: `hook` is 'static, so the opaque pointer stays valid for every call
        // libsrt makes on its own threads, for as long as the listener lives.
        check(&api, unsafe {
            (api.listen_callback)(self.id, super::hook::listen_trampoline, opaque)
        })?;
        // SAFETY: a plain call on an owned handle.
        check(&api, unsafe { (api.listen)(self.id, backlog) })
    }

    /// The next connection waiting on this listener, if any (the listener is
    /// non-blocking).
    ///
    /// # Errors
    /// libsrt's.
    pub fn accept(&self) -> Result<Option<Socket>, SrtError> {
        let api = enter()?;
        // SAFETY: null address and length are allowed (the peer is read later).
        let id = unsafe { (api.accept)(self.id, std::ptr::null_mut(), std::ptr::null_mut()) };
        if id == INVALID {
            let error = last_error(&api);
            return if ERR_AGAIN.contains(&error.code) {
                Ok(None)
            } else {
                Err(error)
            };
        }
        Ok(Some(Socket { id }))
    }

    /// Connects to a listener (blocking, within `SRTO_CONNTIMEO`).
    ///
    /// # Errors
    /// libsrt's (refused, timed out, wrong passphrase).
    pub fn connect(&self, addr: SocketAddr) -> Result<(), SrtError> {
        let api = enter()?;
        let (storage, len) = to_sockaddr(addr);
        // SAFETY: the address is valid for `len` bytes for the call.
        let result = unsafe { (api.connect)(self.id, (&raw const storage).cast(), len) };
        check(&api, result)
    }

    /// One message into `buf`: `Ok(None)` when nothing came within `SRTO_RCVTIMEO`.
    ///
    /// # Errors
    /// libsrt's (the connection lost or closed).
    pub fn recv(&self, buf: &mut [u8]) -> Result<Option<usize>, SrtError> {
        let api = enter()?;
        let len = c_int::try_from(buf.len()).unwrap_or(c_int::MAX);
        // SAFETY: libsrt writes at most `len` bytes into `buf`.
        let n = unsafe { (api.recvmsg)(self.id, buf.as_mut_ptr().cast(), len) };
        if n == INVALID {
            let error = last_error(&api);
            return if ERR_AGAIN.contains(&error.code) {
                Ok(None)
            } else {
                Err(error)
            };
        }
        Ok(Some(usize::try_from(n).unwrap_or(0)))
    }

    /// The link's statistics (totals since the connection began; never cleared).
    ///
    /// # Errors
    /// libsrt's.
    pub fn stats(&self) -> Result<TraceStats, SrtError> {
        let api = enter()?;
        let mut stats = TraceStats::default();
        // SAFETY: `stats` has the layout of SRT_TRACEBSTATS (checked by a test).
        let result = unsafe { (api.bstats)(self.id, &raw mut stats, 0) };
        check(&api, result).map(|()| stats)
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let Ok(api) = enter() else { return };
        // SAFETY: the handle is owned by this value and closed once.
        unsafe { (api.close)(self.id) };
    }
}

fn set_int(id: RawSocket, opt: Opt, value: i32) -> Result<(), SrtError> {
    let api = enter()?;
    let size = std::mem::size_of::<c_int>() as c_int;
    // SAFETY: libsrt reads one int from the pointer, valid for the call.
    let result = unsafe { (api.setsockflag)(id, opt as c_int, (&raw const value).cast(), size) };
    check(&api, result)
}

fn set_bytes(id: RawSocket, opt: Opt, value: &[u8]) -> Result<(), SrtError> {
    let api = enter()?;
    let len = c_int::try_from(value.len()).unwrap_or(c_int::MAX);
    // SAFETY: libsrt copies `len` bytes from the slice, valid for the call.
    let result = unsafe { (api.setsockflag)(id, opt as c_int, value.as_ptr().cast(), len) };
    check(&api, result)
}

/// What libsrt says of the socket `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketState {
    /// Being set up, connecting, connected or listening.
    Live,
    /// Broken, closing or closed: libsrt gave up on it.
    Ended,
    /// Not known to libsrt (not yet in its table, or long gone).
    Unknown,
}

/// `SRTS_NONEXIST`.
const STATE_NONEXIST: i32 = 9;

/// The state of the socket `id`.
pub fn state(id: i32) -> SocketState {
    let Ok(api) = enter() else {
        return SocketState::Ended;
    };
    // SAFETY: any id may be asked about; an unknown one reads SRTS_NONEXIST.
    let state = unsafe { (api.getsockstate)(id) };
    match state {
        STATE_NONEXIST => SocketState::Unknown,
        s if s >= STATE_BROKEN => SocketState::Ended,
        _ => SocketState::Live,
    }
}

/// Why libsrt refused or broke the connection of socket `id` (`SRT_REJ_*`), while
/// libsrt still knows it.
pub fn reject_reason(id: i32) -> i32 {
    let Ok(api) = enter() else { return 0 };
    // SAFETY: any id may be asked about.
    unsafe { (api.getrejectreason)(id) }
}

/// Closes the socket `id` that libsrt created for a connection not accepted yet.
pub fn close_raw(id: i32) {
    let Ok(api) = enter() else { return };
    // SAFETY: closing an unknown or closed id only returns an error.
    unsafe { (api.close)(id) };
}
