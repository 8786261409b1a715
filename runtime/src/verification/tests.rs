//! Tests of verification.
