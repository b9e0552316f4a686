//! Checks every transition table must pass: each row tested, named once, with its own why.

use crate::domain::state_machine::{Dest, Machine, Transition};

/// The state a row leads to from `current`.
pub fn row_destination<M: Machine>(
    table: &[Transition<M>],
    row: &str,
    current: M::Status,
) -> M::Status {
    let t = table.iter().find(|t| t.name == row).unwrap();
    match t.dest {
        Dest::To(s) => s,
        Dest::Same => current,
    }
}

/// Fails when a row has no test (the completeness check).
pub fn assert_every_row_tested<M: Machine>(table: &[Transition<M>], tested: &[&str]) {
    for t in table {
        assert!(tested.contains(&t.name), "row {} has no test", t.name);
    }
}

pub fn assert_row_names_unique<M: Machine>(table: &[Transition<M>]) {
    let mut names: Vec<&str> = table.iter().map(|t| t.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), table.len());
}

/// Each row says why in one line of its own.
pub fn assert_every_row_says_why<M: Machine>(table: &[Transition<M>]) {
    for t in table {
        assert!(!t.why.trim().is_empty(), "row {} has no why", t.name);
        assert!(!t.why.contains('\n'), "row {}: why is one line", t.name);
    }
    let mut whys: Vec<&str> = table.iter().map(|t| t.why).collect();
    whys.sort();
    whys.dedup();
    assert_eq!(whys.len(), table.len(), "a why is copied");
}
