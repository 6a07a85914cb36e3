//! A counting global allocator for tests (DESIGN invariant 5: the admit decision and
//! the request path's hot checks never allocate).
//!
//! A test binary installs it and counts what one closure allocates on its thread:
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: alloc_count::Counting = alloc_count::Counting;
//! let (answer, allocations) = alloc_count::count_allocs(|| hot_path());
//! assert_eq!(allocations, 0);
//! ```
//!
//! `unsafe` is needed only to implement `GlobalAlloc`; every call is forwarded to the
//! system allocator unchanged.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// The allocator: the system allocator, counting allocations and reallocations made
/// by a thread while [`count_allocs`] runs on it.
pub struct Counting;

// SAFETY: every call is forwarded to `System` with the same arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What `f` returns, and how many allocations it made on this thread (always 0
/// unless [`Counting`] is the binary's global allocator).
pub fn count_allocs<T>(f: impl FnOnce() -> T) -> (T, u64) {
    ALLOCS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCS.with(Cell::get))
}
