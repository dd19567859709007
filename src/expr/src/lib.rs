//! Bound scalar expressions, their evaluation with PostgreSQL semantics, and
//! aggregate functions with retraction.
//!
//! It owns what a value becomes under a function, a cast or an aggregate,
//! and knows only `common`: not the binder that builds expressions, nor the
//! batch engine and executors that evaluate them (`ci/layers`).
//!
//! CONTRACT shared by the binder, the batch engine and the stream executors:
//! - [`Expr`] is fully typed: every function call's arguments already have
//!   the types the function takes (the builder functions below insert the
//!   implicit casts), so evaluation never guesses.
//! - Evaluation errors are [`ExprError`]s carrying an
//!   [`ErrorKind`](ebbflow_common::ErrorKind) (numeric value out of range,
//!   division by zero, invalid text representation, ...).
//! - Aggregates are [`Accumulator`]s that accept retractions and can save
//!   and restore their state as a [`Row`](ebbflow_common::Row).

pub mod agg;
mod arith;
mod array;
pub mod build;
mod bytea;
mod calendar;
pub mod cast;
mod datetime;
pub mod eval;
mod func;
mod jsonb;
mod math;
mod monotone;
pub mod over;
mod regexp;
mod split;
mod str_cache;
mod string;
mod text_funcs;
mod to_char;
pub mod vector;
pub mod window;
pub mod zoned;

use ebbflow_common::text::ParseError;
use ebbflow_common::{DataType, Datum, ErrorKind};

pub use agg::{create_accumulator, Accumulator, AggCall, AggKind, AggStates};
pub use build::{agg_return_type, build_cast, build_func, common_type};
pub use cast::cast_value;
pub use func::Func;
pub use string::quote_ident;

/// An error raised while building or evaluating an expression.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExprError {
    /// Text that is not a value of the type it is read as.
    #[error(transparent)]
    Value(#[from] ParseError),
    /// No such function or operator, a datatype mismatch, a numeric value
    /// out of range, division by zero, other data errors.
    #[error("{message}")]
    Eval { kind: ErrorKind, message: String },
}

impl ExprError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ExprError::Eval {
            kind,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            ExprError::Value(e) => e.kind,
            ExprError::Eval { kind, .. } => *kind,
        }
    }
}

pub type ExprResult<T> = Result<T, ExprError>;

/// A typed scalar expression over an input row.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Expr {
    /// Column `index` of the input row.
    InputRef { index: usize, ty: DataType },
    /// A constant (NULL is `value: None`).
    Literal { value: Datum, ty: DataType },
    /// A function or operator call; built only through [`build_func`].
    Func {
        func: Func,
        args: Vec<Expr>,
        ty: DataType,
    },
    /// `CAST(expr AS ty)`; built through [`build_cast`].
    Cast { expr: Box<Expr>, ty: DataType },
    /// `CASE WHEN c1 THEN r1 ... ELSE e END` (a `CASE x WHEN v ...` form is
    /// bound into this one with `x = v` conditions).
    Case {
        whens: Vec<(Expr, Expr)>,
        else_: Option<Box<Expr>>,
        ty: DataType,
    },
}

impl Expr {
    pub fn return_type(&self) -> DataType {
        match self {
            Expr::InputRef { ty, .. }
            | Expr::Literal { ty, .. }
            | Expr::Func { ty, .. }
            | Expr::Cast { ty, .. }
            | Expr::Case { ty, .. } => *ty,
        }
    }

    pub fn input_ref(index: usize, ty: DataType) -> Expr {
        Expr::InputRef { index, ty }
    }

    pub fn literal(value: Datum, ty: DataType) -> Expr {
        Expr::Literal { value, ty }
    }

    /// Rewrite every `InputRef` index through `f` (used when the planner
    /// moves an expression onto a differently shaped input).
    pub fn map_input_refs(&mut self, f: &mut impl FnMut(usize) -> usize) {
        match self {
            Expr::InputRef { index, .. } => *index = f(*index),
            Expr::Literal { .. } => {}
            Expr::Func { args, .. } => args.iter_mut().for_each(|a| a.map_input_refs(f)),
            Expr::Cast { expr, .. } => expr.map_input_refs(f),
            Expr::Case { whens, else_, .. } => {
                for (c, r) in whens {
                    c.map_input_refs(f);
                    r.map_input_refs(f);
                }
                if let Some(e) = else_ {
                    e.map_input_refs(f);
                }
            }
        }
    }

    /// The terms of a conjunction (`a AND b AND c` gives `[a, b, c]`).
    pub fn into_conjuncts(self) -> Vec<Expr> {
        match self {
            Expr::Func {
                func: Func::And,
                args,
                ..
            } => args.into_iter().flat_map(Expr::into_conjuncts).collect(),
            other => vec![other],
        }
    }

    /// The terms of a conjunction split into those that read columns, all
    /// below `width`, and the others (each part in the original order).
    pub fn split_conjuncts_below(self, width: usize) -> (Vec<Expr>, Vec<Expr>) {
        self.into_conjuncts().into_iter().partition(|t| {
            let mut r = Vec::new();
            t.collect_input_refs(&mut r);
            !r.is_empty() && r.iter().all(|&i| i < width)
        })
    }

    /// Every input column the expression reads.
    pub fn collect_input_refs(&self, out: &mut Vec<usize>) {
        match self {
            Expr::InputRef { index, .. } => out.push(*index),
            Expr::Literal { .. } => {}
            Expr::Func { args, .. } => args.iter().for_each(|a| a.collect_input_refs(out)),
            Expr::Cast { expr, .. } => expr.collect_input_refs(out),
            Expr::Case { whens, else_, .. } => {
                for (c, r) in whens {
                    c.collect_input_refs(out);
                    r.collect_input_refs(out);
                }
                if let Some(e) = else_ {
                    e.collect_input_refs(out);
                }
            }
        }
    }
}
