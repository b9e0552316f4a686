//! Domain tests: fixtures, per-row unit tests, replay scenarios and property tests.

mod fixtures;
