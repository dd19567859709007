//! ebbflow: a streaming SQL database that scales running jobs online.

pub mod batch;
pub mod common;
pub mod expr;
pub mod frontend;
pub mod meta;
pub mod pgwire;
pub mod planner;
pub mod sql;
pub mod storage;
pub mod stream;
