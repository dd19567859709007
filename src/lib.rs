//! ebbflow: a streaming SQL database that scales running jobs online.

pub mod common;
pub mod expr;
pub mod meta;
pub mod planner;
pub mod sql;
