//! An SRT epoll watching sockets for reading (released when dropped).

use super::*;

/// An SRT epoll watching sockets for reading, released when dropped.
#[derive(Debug)]
pub struct Epoll {
    id: c_int,
}

impl Epoll {
    /// A new, empty epoll.
    ///
    /// # Errors
    /// libsrt missing, or its error.
    pub fn new() -> Result<Self, SrtError> {
        let api = enter()?;
        // SAFETY: a plain call.
        let id = unsafe { (api.epoll_create)() };
        if id < 0 {
            return Err(last_error(&api));
        }
        Ok(Self { id })
    }

    /// Watches `socket` for reading (a listener: for a connection to accept).
    ///
    /// # Errors
    /// libsrt's.
    pub fn add(&self, socket: &Socket) -> Result<(), SrtError> {
        let api = enter()?;
        let events: c_int = EPOLL_IN | EPOLL_ERR;
        // SAFETY: `events` is valid for the call.
        check(&api, unsafe {
            (api.epoll_add_usock)(self.id, socket.id(), &raw const events)
        })
    }

    /// Watches a system socket (a UDP socket that wakes the waiter) for reading.
    ///
    /// # Errors
    /// libsrt's.
    pub fn add_system(&self, socket: &impl std::os::fd::AsRawFd) -> Result<(), SrtError> {
        let api = enter()?;
        let events: c_int = EPOLL_IN;
        // SAFETY: libsrt only polls the descriptor, which the caller keeps open for as
        // long as this epoll waits on it; `events` is valid for the call.
        check(&api, unsafe {
            (api.epoll_add_ssock)(self.id, socket.as_raw_fd(), &raw const events)
        })
    }

    /// Waits up to `timeout` for a watched socket to be ready; true if one is.
    ///
    /// # Errors
    /// libsrt's.
    pub fn wait(&self, timeout: Duration) -> Result<bool, SrtError> {
        let api = enter()?;
        let mut ready = [0 as RawSocket; 4];
        let mut ready_n = ready.len() as c_int;
        let mut system = [0 as c_int; 4];
        let mut system_n = system.len() as c_int;
        let ms = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
        // SAFETY: libsrt writes at most the given counts into the arrays and updates
        // the counts; null write sets are allowed (none are watched for writing).
        let n = unsafe {
            (api.epoll_wait)(
                self.id,
                ready.as_mut_ptr(),
                &raw mut ready_n,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                ms,
                system.as_mut_ptr(),
                &raw mut system_n,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let error = last_error(&api);
            return if ERR_AGAIN.contains(&error.code) {
                Ok(false)
            } else {
                Err(error)
            };
        }
        Ok(n > 0)
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        let Ok(api) = enter() else { return };
        // SAFETY: the id is owned by this value and released once.
        unsafe { (api.epoll_release)(self.id) };
    }
}
