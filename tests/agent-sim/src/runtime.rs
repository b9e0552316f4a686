//! A simulated host's container runtime: where its pulls go. Without one, the host answers the
//! image availability check as if every pull succeeded; with one (the lab's disconnected run
//! gives each host a runtime that reads a real registry through the mirrors of its discovery
//! ignition), the check and the installer image's pull at the install step answer from it.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

/// One image pulled: where from (a mirror or the source), its size and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Pulled {
    pub from: String,
    pub size_bytes: f64,
    pub seconds: f64,
}

pub type PullFuture<'a> = Pin<Box<dyn Future<Output = Result<Pulled, String>> + Send + 'a>>;

/// Pulls images as the host's podman would (mirrors, CA, credentials are the runtime's).
pub trait ContainerRuntime: Send + Sync + Debug {
    /// Pulls `image`, or says why not (every source tried, each with its answer).
    fn pull<'a>(&'a self, image: &'a str) -> PullFuture<'a>;
}

/// One image's entry in the `container-image-availability` reply, as the real agent writes it
/// (`download_rate` in MB/s; a failure has only its name and result).
pub fn availability_entry(image: &str, pulled: &Result<Pulled, String>) -> Value {
    match pulled {
        Ok(p) => {
            let seconds = p.seconds.max(0.001);
            json!({
                "name": image,
                "result": "success",
                "size_bytes": p.size_bytes,
                "time": seconds,
                "download_rate": p.size_bytes / seconds / 1_000_000.0,
            })
        }
        Err(_) => json!({"name": image, "result": "failure"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_becomes_the_agents_availability_entry() {
        let ok = Ok(Pulled {
            from: "mirror.example.com/r@sha256:ab".into(),
            size_bytes: 2_000_000.0,
            seconds: 0.5,
        });
        assert_eq!(
            availability_entry("quay.io/r@sha256:ab", &ok),
            json!({"name": "quay.io/r@sha256:ab", "result": "success", "size_bytes": 2_000_000.0,
                   "time": 0.5, "download_rate": 4.0})
        );
        assert_eq!(
            availability_entry("quay.io/r:1", &Err("no mirror".into())),
            json!({"name": "quay.io/r:1", "result": "failure"})
        );
    }
}
