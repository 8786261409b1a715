//! Tests of signing.
