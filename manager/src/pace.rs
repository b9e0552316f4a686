//! Paced status writes: a status that moves many times a second (a host's install stages at
//! the simulated hosts' speed, a thousand hosts registering) is written at most once per
//! interval per object, and the newest state goes when the interval ends. The first change of
//! an object goes at once; nothing is dropped, only coalesced.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// When each object was last written; entries older than the interval are forgotten as new
/// ones come (they no longer hold anything back).
pub struct Pace {
    every: Duration,
    last: Mutex<HashMap<String, Instant>>,
}

/// What to do with a change of one object now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Write it now.
    Now,
    /// Written less than the interval ago: write it (its newest state) after this wait.
    After(Duration),
}

impl Pace {
    pub fn new(every: Duration) -> Pace {
        Pace {
            every,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a change of `key` is written now or after a wait (pure: the caller's clock).
    pub fn turn(&self, key: &str, now: Instant) -> Turn {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match last.get(key) {
            Some(at) if now.duration_since(*at) < self.every => {
                Turn::After(self.every - now.duration_since(*at))
            }
            _ => Turn::Now,
        }
    }

    /// `key` was written at `now`.
    pub fn wrote(&self, key: &str, now: Instant) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.len() > 4096 {
            let every = self.every;
            last.retain(|_, at| now.duration_since(*at) < every);
        }
        last.insert(key.to_string(), now);
    }

    /// `key`'s object is gone: its next change (a new object of that name) goes at once.
    pub fn forget(&self, key: &str) {
        self.last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_change_goes_at_once_the_next_waits_out_the_interval() {
        let pace = Pace::new(Duration::from_secs(2));
        let t0 = Instant::now();
        assert_eq!(pace.turn("a", t0), Turn::Now);
        pace.wrote("a", t0);
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(pace.turn("a", t1), Turn::After(Duration::from_millis(1500)));
        assert_eq!(
            pace.turn("b", t1),
            Turn::Now,
            "each object has its own pace"
        );
        assert_eq!(pace.turn("a", t0 + Duration::from_secs(2)), Turn::Now);
        pace.forget("a");
        assert_eq!(pace.turn("a", t1), Turn::Now);
    }

    #[test]
    fn old_entries_go_as_new_ones_come() {
        let pace = Pace::new(Duration::from_secs(1));
        let t0 = Instant::now();
        for i in 0..5000 {
            pace.wrote(&format!("k{i}"), t0);
        }
        let later = t0 + Duration::from_secs(5);
        pace.wrote("new", later);
        let held = pace.last.lock().unwrap().len();
        assert!(held < 5000, "{held}");
    }
}
