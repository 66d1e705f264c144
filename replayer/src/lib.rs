//! Deterministic replay.
