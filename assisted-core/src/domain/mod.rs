//! Pure install domain: state machines, validations, orchestration (no I/O).
