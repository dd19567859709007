//! Planning: the logical plan, and its translation into a stream fragment
//! graph.

pub mod logical;
