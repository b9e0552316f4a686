//! Domain tests: fixtures, per-row unit tests, validations, replay scenarios, property tests.

mod cluster_rows;
mod fixtures;
mod host_rows;
mod props;
mod replay;
mod steps_tests;
mod table_checks;
mod validation_tests;
