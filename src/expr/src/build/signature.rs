//! Functions with one fixed signature (the string functions of
//! `text_funcs`, the calendar's): no overload resolution, only PostgreSQL's
//! implicit casts to each parameter.

use super::{build_cast, func_expr, no_operator, numeric_rank};
use crate::func::Func;
use crate::{Expr, ExprResult};
use ebbflow_common::DataType;

/// A call of a function with one fixed signature: each argument must be
/// implicitly castable to its parameter (a smaller integer to `int4`, any
/// number to `double precision`, a date to `timestamp`), and is cast.
pub(crate) fn fixed_signature(
    func: Func,
    args: Vec<Expr>,
    params: &[DataType],
    ret: DataType,
) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let fits = |have: DataType, want: DataType| match want {
        Int32 => matches!(have, Int16 | Int32),
        Float64 => numeric_rank(have).is_some(),
        Timestamp => matches!(have, Date | Timestamp),
        other => have == other,
    };
    if types.len() != params.len() || !types.iter().zip(params).all(|(h, w)| fits(*h, *w)) {
        return Err(no_operator(func, &types));
    }
    let args = args
        .into_iter()
        .zip(params)
        .map(|(a, want)| build_cast(a, *want, true))
        .collect::<ExprResult<Vec<_>>>()?;
    Ok(func_expr(func, args, ret))
}
