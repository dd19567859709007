//! Type resolution: building function calls and casts with PostgreSQL's
//! implicit-cast rules.

use super::{Expr, ExprError, ExprResult};
use crate::common::DataType;

/// Scalar functions and operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    // arithmetic
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    // comparison
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    IsDistinctFrom,
    IsNotDistinctFrom,
    // logic
    And,
    Or,
    Not,
    IsNull,
    IsNotNull,
    IsTrue,
    IsNotTrue,
    IsFalse,
    IsNotFalse,
    // conditional
    Coalesce,
    NullIf,
    Greatest,
    Least,
    // strings
    Concat, // the `||` operator
    Lower,
    Upper,
    Length,
    Substr,
    Trim,
    Like,
    NotLike,
    ILike,
    NotILike,
    Replace,
    Position,
    // math
    Round,
    Abs,
    Ceil,
    Floor,
}

impl Func {
    /// Look a function up by its SQL name (lower case), e.g. `"lower"`,
    /// `"substring"`/`"substr"`, `"char_length"`/`"length"`.
    pub fn from_name(name: &str) -> Option<Func> {
        let _ = name;
        todo!("Func::from_name")
    }
}

/// Build a call of `func` over `args`, inserting implicit casts and
/// resolving the return type the way PostgreSQL does (e.g. `int + bigint`
/// is bigint, `int / int` is integer division, `int + numeric` is numeric,
/// `varchar || int` is varchar). Unknown combinations fail with `42883`
/// ("operator does not exist: integer + boolean").
pub fn build_func(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    let _ = (func, args);
    Err(ExprError::new("0A000", "not implemented"))
}

/// Build `CAST(expr AS ty)`. With `explicit = false` only PostgreSQL's
/// implicit/assignment casts are allowed (used for INSERT and for unifying
/// types); an impossible cast fails with `42846`. Casting a NULL literal or
/// a literal of another type folds into a literal.
pub fn build_cast(expr: Expr, ty: DataType, explicit: bool) -> ExprResult<Expr> {
    let _ = (explicit, ty);
    Ok(expr)
}

/// The type two values must be cast to for comparison, UNION, CASE or
/// COALESCE (PostgreSQL's `select_common_type`), or `42804` if none.
pub fn common_type(a: DataType, b: DataType) -> ExprResult<DataType> {
    if a == b {
        Ok(a)
    } else {
        Err(ExprError::new("42804", "types do not match"))
    }
}

/// Return type of an aggregate over an argument type (`sum(int)` is bigint,
/// `sum(bigint)` numeric, `avg(int)` numeric, `avg(double)` double,
/// `count` bigint, min/max the argument type), or `42883` if the aggregate
/// does not take that type.
pub fn agg_return_type(kind: super::AggKind, arg: Option<DataType>) -> ExprResult<DataType> {
    let _ = (kind, arg);
    todo!("agg_return_type")
}
