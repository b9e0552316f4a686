//! The engine both state machines (host, cluster) share: a table of named rows tried in order,
//! the first row whose event, source state and guard match wins (upstream's registration order).
//!
//! A machine names its event, status, effect and guard-context types through [`Machine`]; its
//! table is a `static` slice of [`Transition`]s written with [`transition!`]. The engine finds
//! the row ([`find_row`]) and turns it into the new status, status_info and effects ([`step`]);
//! each machine wraps that [`Step`] into its own outcome type.

/// The types one state machine is made of.
pub trait Machine: 'static {
    type Event: Copy + PartialEq;
    type Status: Copy + PartialEq;
    type Effect: Copy;
    /// What guards and computed infos look at.
    type Ctx<'a>;
    /// The state the machine is in (the rows' source).
    fn status(ctx: &Self::Ctx<'_>) -> Self::Status;
    /// The status_info it shows now (kept by [`Info::Keep`]).
    fn status_info<'c>(ctx: &'c Self::Ctx<'_>) -> &'c str;
}

/// Destination of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest<S> {
    To(S),
    /// Stay in the source state (an accepted no-op).
    Same,
}

/// How a row sets status_info.
pub enum Info<M: Machine> {
    Keep,
    Text(&'static str),
    Compute(for<'a, 'b> fn(&'b M::Ctx<'a>) -> String),
}

impl<M: Machine> Clone for Info<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M: Machine> Copy for Info<M> {}

/// One row of a transition table.
pub struct Transition<M: Machine> {
    /// Stable row name (used in tests and logs).
    pub name: &'static str,
    /// Why the row exists: the real situation it handles, in one sentence (the counterpart
    /// of upstream's rule descriptions). Documentation only; matching never reads it.
    pub why: &'static str,
    pub event: M::Event,
    pub sources: &'static [M::Status],
    pub guard: for<'a, 'b> fn(&'b M::Ctx<'a>) -> bool,
    pub dest: Dest<M::Status>,
    pub info: Info<M>,
    pub effects: &'static [M::Effect],
}

/// The first row of `table` for `event` whose source is the current state and whose guard holds.
pub fn find_row<M: Machine>(
    table: &'static [Transition<M>],
    event: M::Event,
    ctx: &M::Ctx<'_>,
) -> Option<&'static Transition<M>> {
    let status = M::status(ctx);
    table
        .iter()
        .find(|t| t.event == event && t.sources.contains(&status) && (t.guard)(ctx))
}

/// What a matched row (or no row: nothing changes) does to the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<S, E> {
    pub status: S,
    pub status_info: String,
    /// Status or status_info differs from the current ones.
    pub changed: bool,
    /// Name of the matched row; `None` when no row matched.
    pub transition: Option<&'static str>,
    pub effects: Vec<E>,
}

/// Applies `row` to the current state of `ctx`.
pub fn step<M: Machine>(
    ctx: &M::Ctx<'_>,
    row: Option<&'static Transition<M>>,
) -> Step<M::Status, M::Effect> {
    let current = M::status(ctx);
    let current_info = M::status_info(ctx);
    let (status, status_info, effects) = match row {
        None => (current, current_info.to_string(), Vec::new()),
        Some(t) => {
            let status = match t.dest {
                Dest::To(s) => s,
                Dest::Same => current,
            };
            let info = match t.info {
                Info::Keep => current_info.to_string(),
                Info::Text(s) => s.to_string(),
                Info::Compute(f) => f(ctx),
            };
            (status, info, t.effects.to_vec())
        }
    };
    Step {
        changed: status != current || status_info != current_info,
        status,
        status_info,
        transition: row.map(|t| t.name),
        effects,
    }
}

/// `transition!(EventEnum, name, why, event, sources, guard, dest, info[, effects])`: one row,
/// the event named by its variant of `EventEnum`.
macro_rules! transition {
    (@effects) => { &[] };
    (@effects $eff:expr) => { $eff };
    (
        $kind:ident,
        $name:literal,
        $why:literal,
        $ev:ident,
        $src:expr,
        $guard:expr,
        $dest:expr,
        $info:expr
        $(, $eff:expr)?
    ) => {
        $crate::domain::state_machine::Transition {
            name: $name,
            why: $why,
            event: $kind::$ev,
            sources: $src,
            guard: $guard,
            dest: $dest,
            info: $info,
            effects: transition!(@effects $($eff)?),
        }
    };
}
pub(crate) use transition;
