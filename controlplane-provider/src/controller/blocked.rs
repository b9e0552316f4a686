//! Why the control plane cannot progress: what `dereference`, `plan` and the helpers they call
//! report, and `status` shows on `Available`.

/// What stops the control plane from progressing, shown on `Available`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub reason: &'static str,
    pub message: String,
}
