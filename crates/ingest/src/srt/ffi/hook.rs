//! The listen hook: libsrt's listen callback, handed to safe Rust as a [`Handshake`]
//! to accept or refuse.

use super::*;

/// A handshake being decided, as the listen hook sees it.
#[derive(Debug)]
pub struct Handshake<'a> {
    /// The id of the socket libsrt made for this connection.
    pub socket: i32,
    /// The caller's address.
    pub peer: SocketAddr,
    /// The caller's streamid, if it sent one.
    pub stream_id: Option<&'a [u8]>,
}

impl Handshake<'_> {
    /// Sets the passphrase this connection must use. Runs on libsrt's thread, so it
    /// never waits for the gate: at exit, with the gate closing, it fails at once
    /// ([`SrtError::is_exiting`]) and the handshake is refused.
    ///
    /// # Errors
    /// libsrt's; the process is exiting.
    pub fn set_passphrase(&self, passphrase: &[u8]) -> Result<(), SrtError> {
        let api = try_enter().ok_or_else(closing)?;
        let len = c_int::try_from(passphrase.len()).unwrap_or(c_int::MAX);
        let opt = Opt::Passphrase as c_int;
        // SAFETY: libsrt copies `len` bytes from the slice, valid for the call.
        let result =
            unsafe { (api.setsockflag)(self.socket, opt, passphrase.as_ptr().cast(), len) };
        check(&api, result)
    }
}

/// Decides the handshakes of a listener: `Err(reason)` refuses with that reject
/// reason (1000 and above: `SRT_REJX_*` or the application's own).
pub trait ListenHook: Send + Sync {
    /// Called on libsrt's receiving thread: short and non-blocking.
    fn handshake(&self, handshake: &Handshake<'_>) -> Result<(), i32>;
}

/// Where a listener's hook lives for libsrt: set while the listener serves, emptied
/// when it stops (a handshake then is refused).
#[derive(Default)]
pub struct HookSlot(Mutex<Option<Arc<dyn ListenHook>>>);

impl std::fmt::Debug for HookSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookSlot")
            .field("set", &self.get().is_some())
            .finish()
    }
}

impl HookSlot {
    /// A slot for the life of the process (libsrt holds a pointer to it).
    pub fn leak() -> &'static HookSlot {
        Box::leak(Box::default())
    }

    /// Puts `hook` in (or empties the slot with `None`).
    pub fn set(&self, hook: Option<Arc<dyn ListenHook>>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = hook;
    }

    fn get(&self) -> Option<Arc<dyn ListenHook>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// `SRT_REJX_ISE`: the hook is gone or failed, or the process is exiting.
pub const REJECT_INTERNAL: c_int = 1500;

/// The C entry libsrt calls for each conclusion handshake.
pub(super) unsafe extern "C" fn listen_trampoline(
    opaque: *mut c_void,
    ns: RawSocket,
    _hs_version: c_int,
    peer: *const libc::sockaddr,
    stream_id: *const c_char,
) -> c_int {
    // A panic must not cross into C: it is caught and the caller refused.
    let decided = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `opaque` is the &'static HookSlot given to `listen`.
        let slot = unsafe { &*opaque.cast_const().cast::<HookSlot>() };
        let hook = slot.get().ok_or(REJECT_INTERNAL)?;
        // SAFETY: libsrt passes the caller's address as a valid sockaddr.
        let peer = unsafe { from_sockaddr(peer) }.ok_or(REJECT_INTERNAL)?;
        let stream_id = if stream_id.is_null() {
            None
        } else {
            // SAFETY: libsrt passes a NUL-terminated string valid during the call.
            Some(unsafe { CStr::from_ptr(stream_id) }.to_bytes())
        };
        let stream_id = stream_id.filter(|id| !id.is_empty());
        hook.handshake(&Handshake {
            socket: ns,
            peer,
            stream_id,
        })
    }));
    let reason = match decided {
        Ok(Ok(())) => return 0,
        Ok(Err(reason)) => reason,
        Err(_) => REJECT_INTERNAL,
    };
    // Not waiting for the gate: at exit it may be closing while libsrt's thread is here.
    if let Some(api) = try_enter() {
        // SAFETY: `ns` is the socket libsrt is deciding; setting its reason is what
        // the callback is documented to do before returning -1.
        unsafe { (api.setrejectreason)(ns, reason) };
    }
    -1
}
