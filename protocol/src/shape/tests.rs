//! Shaping tests.
