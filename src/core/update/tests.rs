//! Reducer tests: no terminal, no IO.
