//! Join kinds and sort keys, shared by the planners and the executors.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
}

/// One `ORDER BY` item over an input column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OrderKey {
    pub index: usize,
    pub desc: bool,
    /// PostgreSQL default: NULLS LAST for ASC, NULLS FIRST for DESC.
    pub nulls_first: bool,
}
