//! Binder tests.
