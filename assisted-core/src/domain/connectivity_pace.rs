//! The pace of the connectivity check in big clusters, as upstream sets it
//! (`internal/host/hostcommands/connectivity_check_cmd.go`): a cluster of up to 150 hosts gets
//! it in every next-steps answer; a bigger one admits at most 150 hosts a minute, first come
//! first served (a host refused waits in line and is admitted before later ones). Each check
//! carries every peer, so without the pace a 1,000-host cluster answers 150 KB to every poll.

use std::collections::VecDeque;

use jiff::{SignedDuration, Timestamp};

/// Connectivity checks a cluster over this many hosts sends per minute, and the size up to which
/// every next-steps answer carries one.
pub const MAX_CONNECTIVITY_CHECKS_PER_MINUTE: usize = 150;

/// One cluster's admissions: when hosts were admitted in the last minute, and who waits.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ConnectivityQueue {
    admitted: VecDeque<Timestamp>,
    waiting: Vec<String>,
}

impl ConnectivityQueue {
    /// Whether `host_id` gets a connectivity check now; a host refused keeps its place in line.
    pub fn admit(&mut self, host_id: &str, now: Timestamp) -> bool {
        while self
            .admitted
            .front()
            .is_some_and(|t| now.duration_since(*t) > SignedDuration::from_mins(1))
        {
            self.admitted.pop_front();
        }
        let index = match self.waiting.iter().position(|h| h == host_id) {
            Some(i) => i,
            None => {
                self.waiting.push(host_id.to_string());
                self.waiting.len() - 1
            }
        };
        let room = MAX_CONNECTIVITY_CHECKS_PER_MINUTE.saturating_sub(self.admitted.len());
        if index < room {
            self.waiting.remove(index);
            self.admitted.push_back(now);
            true
        } else {
            false
        }
    }
}

/// Whether a host of a cluster of `cluster_hosts` hosts gets the connectivity check in this
/// answer; `queue` is the cluster's (only touched for clusters over the limit).
pub fn connectivity_check_due(
    cluster_hosts: usize,
    queue: &mut ConnectivityQueue,
    host_id: &str,
    now: Timestamp,
) -> bool {
    cluster_hosts <= MAX_CONNECTIVITY_CHECKS_PER_MINUTE || queue.admit(host_id, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::UNIX_EPOCH + SignedDuration::from_secs(secs)
    }

    #[test]
    fn a_cluster_up_to_the_limit_always_gets_it() {
        let mut q = ConnectivityQueue::default();
        for _ in 0..1000 {
            assert!(connectivity_check_due(150, &mut q, "h", at(0)));
        }
        assert_eq!(q, ConnectivityQueue::default(), "the queue is not touched");
    }

    #[test]
    fn a_big_cluster_admits_150_a_minute_first_come_first_served() {
        let mut q = ConnectivityQueue::default();
        let hosts: Vec<String> = (0..400).map(|i| format!("h{i}")).collect();
        let admitted = hosts
            .iter()
            .filter(|h| connectivity_check_due(400, &mut q, h, at(0)))
            .count();
        assert_eq!(admitted, 150);
        // Within the minute nobody else, not even an admitted host asking again.
        assert!(!connectivity_check_due(400, &mut q, "h0", at(30)));
        assert!(!connectivity_check_due(400, &mut q, "h399", at(30)));
        // After it, the hosts that waited longest come first: h150 (refused at 0 s) is admitted,
        // and h0 (who asked again at 30 s) waits behind the 250 refused at 0 s.
        assert!(connectivity_check_due(400, &mut q, "h150", at(61)));
        assert!(!connectivity_check_due(400, &mut q, "h0", at(61)));
        let mut next_minute = 1;
        for h in &hosts[151..300] {
            next_minute += usize::from(connectivity_check_due(400, &mut q, h, at(62)));
        }
        assert_eq!(next_minute, 150, "150 again in the second minute");
    }
}
