//! Giving memory back to the system after large requests (issue 28, point 3): without
//! this, RSS stayed near its peak after a burst of large bodies. The only `unsafe` code of
//! the crate: two allocators' C entry points, called with plain values.
//!
//! mimalloc is the allocator of the whole process (`override`: SQLite's too), so memory one
//! part frees another reuses.
//!
//! * [`tune`], at start: should glibc's allocator serve anything (a library bypassing the
//!   override), blocks of 256 KiB and more get mappings of their own, returned when freed.
//! * While large bodies are about ([`Janitor`], 30 s after the last one): memory freed is
//!   purged at once (mimalloc's `purge_delay` 0, else its default 1 s, which kept large
//!   freed blocks resident while the next part of the turn allocated more), and every
//!   2 s [`release`] purges what is left (threads that went idle never purge on their own).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// glibc blocks this large (bytes) or larger are mapped on their own.
const MMAP_THRESHOLD: i32 = 256 << 10;

/// mimalloc's `mi_option_purge_delay` (its index in `mi_option_t`, mimalloc.h) and its
/// default in milliseconds.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const DEFAULT_PURGE_DELAY_MS: std::os::raw::c_long = 1000;

/// Purges freed memory at once (`eager`), or after mimalloc's default delay.
pub fn eager_purge(eager: bool) {
    // SAFETY: mi_option_set stores one integer option; options may change at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, if eager { 0 } else { DEFAULT_PURGE_DELAY_MS });
    }
}

/// How often the janitor releases memory, and for how long after a large body.
const EVERY: Duration = Duration::from_secs(2);
const FOR: Duration = Duration::from_secs(30);

/// Sets glibc's mapping threshold ([`MMAP_THRESHOLD`]); no-op elsewhere.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes two integers and only changes allocator parameters; it is
    // thread-safe and may be called at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Returns freed memory to the system: mimalloc's freed pages are purged (`mi_collect`) and
/// glibc's heaps trimmed. Blocking for as long as the purge takes (milliseconds).
pub fn release() {
    // SAFETY: mi_collect takes a flag and only purges memory already freed; it may be
    // called from any thread at any time.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes a size and only returns free memory; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Calls [`release`] every 2 s for 30 s after the last large body ([`Janitor::large_body`]).
#[derive(Debug, Default)]
pub struct Janitor {
    started: AtomicBool,
    /// Freed memory is purged at once (a large body came less than 30 s ago).
    eager: Arc<AtomicBool>,
    /// Unix milliseconds of the last large body.
    last: Arc<AtomicU64>,
}

impl Janitor {
    /// Notes a large body now (starting the janitor's task on first use; needs a tokio
    /// runtime).
    pub fn large_body(&self) {
        self.last.store(now_ms(), Ordering::Release);
        if self.eager.swap(true, Ordering::AcqRel) {
            return;
        }
        eager_purge(true);
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let (last, eager) = (self.last.clone(), self.eager.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            loop {
                tick.tick().await;
                if !eager.load(Ordering::Acquire) {
                    continue;
                }
                let _ = tokio::task::spawn_blocking(release).await;
                if now_ms().saturating_sub(last.load(Ordering::Acquire)) > FOR.as_millis() as u64 {
                    // A large body arriving now sets it again (and purges eagerly again).
                    eager.store(false, Ordering::Release);
                    eager_purge(false);
                }
            }
        });
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_named() {
        // SAFETY: reads one integer option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(get(), DEFAULT_PURGE_DELAY_MS, "index {PURGE_DELAY} is mi_option_purge_delay");
        eager_purge(true);
        assert_eq!(get(), 0);
        eager_purge(false);
        assert_eq!(get(), DEFAULT_PURGE_DELAY_MS);
        release();
    }
}
