//! Analyses over recordings.
