//! Per-provider request limits for the benchmark: requests per minute and
//! requests in flight, shared by every job (and every model) that talks to
//! one provider profile, enforced on each HTTP attempt (retries included)
//! through the provider's [`Gate`].
//!
//! The rate is a token bucket that holds one token: attempts are spaced at
//! least `60 s / rpm` apart, so N attempts take at least `(N - 1) · 60 s /
//! rpm` — stricter than a per-minute window, and never a burst a server's
//! shorter windows would refuse. A concurrency slot is taken first and held
//! until the attempt ends; the rate is waited for while holding it. The
//! server's own 429s and `Retry-After` stay the provider's to honour.
//!
//! Owns: the limits as values and the limiter. Does not own: reading them
//! from configuration (the binary, from `[providers.NAME]`), or which
//! models share one (the caller hands the same [`Limiter`] to each).
//! `sim:` and `replay:` models are never limited: they get no gate.
//!
//! Invariant: at most `max_concurrency` admissions of one limiter are alive
//! at once, and no two are granted less than `60 s / rpm` apart.

use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::agent::provider::{Admission, Gate};

/// A provider's limits (`None`: unlimited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests per minute.
    pub rpm: Option<NonZeroU32>,
    /// Requests in flight at once.
    pub max_concurrency: Option<NonZeroU32>,
}

impl Limits {
    /// Whether anything is limited.
    pub fn any(&self) -> bool {
        self.rpm.is_some() || self.max_concurrency.is_some()
    }

    /// A limiter for these limits, as a provider's gate (`None` when nothing
    /// is limited, so an unlimited provider pays nothing).
    pub fn gate(self) -> Option<Arc<dyn Gate>> {
        if self.any() {
            Some(Arc::new(Limiter::new(self)))
        } else {
            None
        }
    }
}

/// The shared state behind one provider's [`Limits`].
#[derive(Debug)]
pub struct Limiter {
    /// The least time between two admissions.
    interval: Option<Duration>,
    /// When the next admission may be granted.
    next: Mutex<Option<Instant>>,
    /// Concurrency slots.
    slots: Option<Arc<Semaphore>>,
}

impl Limiter {
    /// A limiter enforcing `limits`.
    pub fn new(limits: Limits) -> Limiter {
        Limiter {
            interval: limits.rpm.map(|rpm| Duration::from_secs(60) / rpm.get()),
            next: Mutex::new(None),
            slots: limits.max_concurrency.map(|n| {
                let n = usize::try_from(n.get()).unwrap_or(Semaphore::MAX_PERMITS);
                Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS)))
            }),
        }
    }

    /// Waits for a slot, then for the rate; the slot is given back when the
    /// returned value is dropped.
    pub async fn admit(&self) -> Admission {
        // The semaphore is never closed, so acquiring only waits.
        let slot = match &self.slots {
            Some(s) => Arc::clone(s).acquire_owned().await.ok(),
            None => None,
        };
        if let Some(interval) = self.interval {
            // Reserve the next free instant under the lock, sleep outside it.
            let at = {
                let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                let at = next.map_or(now, |n| n.max(now));
                *next = Some(at + interval);
                at
            };
            tokio::time::sleep_until(at).await;
        }
        Box::new(slot)
    }
}

impl Gate for Limiter {
    fn admit(&self) -> Pin<Box<dyn Future<Output = Admission> + Send + '_>> {
        Box::pin(Limiter::admit(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: u32) -> Option<NonZeroU32> {
        NonZeroU32::new(v)
    }

    #[test]
    fn nothing_limited_is_no_gate() {
        assert!(Limits::default().gate().is_none());
        assert!(
            Limits {
                rpm: n(60),
                max_concurrency: None
            }
            .gate()
            .is_some()
        );
    }

    /// Admissions are spaced by 60 s / rpm, the first at once (a lower
    /// bound only: a busy machine may be later, never earlier).
    #[tokio::test]
    async fn admissions_are_spaced_by_the_rate() {
        let limiter = Limiter::new(Limits {
            rpm: n(1200),
            max_concurrency: None,
        });
        let start = Instant::now();
        let mut at = Vec::new();
        for _ in 0..4 {
            drop(limiter.admit().await);
            at.push(start.elapsed());
        }
        for (i, t) in at.iter().enumerate() {
            assert!(*t >= Duration::from_millis(50) * i as u32, "{at:?}");
        }
    }

    /// A slot is held until the admission is dropped.
    #[tokio::test]
    async fn a_slot_is_held_until_dropped() {
        let limiter = Arc::new(Limiter::new(Limits {
            rpm: None,
            max_concurrency: n(1),
        }));
        let first = limiter.admit().await;
        let waiting = {
            let l = Arc::clone(&limiter);
            tokio::spawn(async move { drop(l.admit().await) })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished());
        drop(first);
        waiting.await.unwrap();
    }
}
