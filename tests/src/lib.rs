//! End-to-end tests live under `tests/`.
