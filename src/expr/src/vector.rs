//! Evaluation of an [`Expr`] over a chunk, a column at a time.
//!
//! The result is what [`Expr::eval`] gives row by row, PostgreSQL's
//! semantics included (the same arithmetic, casts and comparisons compute
//! each value). Strict functions and the logical operators take their
//! arguments' columns; CASE, COALESCE and the other forms that evaluate
//! lazily fall back to [`Expr::eval`] per row. A row whose evaluation
//! fails is NULL in the result and its error is returned beside it: the
//! streaming operators log it and go on (see `stream::executor::project::log_errors`). Where the row
//! path would have stopped at the first failing or deciding argument of
//! AND / OR, so does the columnar path.

use ebbflow_common::ErrorKind;
use std::cmp::Ordering;

use super::arith::{arith, ArithOp};
use super::cast::cast_value;
use super::eval::{apply_strict, compare, is_strict};
use super::func::Func;
use super::{Expr, ExprError, ExprResult};
use ebbflow_common::{
    datum_ref, Column, ColumnBuilder, DataType, Datum, ScalarRef, ScalarValue, StreamChunk,
};

/// A column and the rows whose evaluation failed.
struct Evaluated {
    column: Column,
    /// Per row, once any row failed.
    errors: Option<Vec<Option<ExprError>>>,
}

impl Evaluated {
    fn error(&self, i: usize) -> Option<&ExprError> {
        self.errors.as_ref().and_then(|e| e[i].as_ref())
    }
}

/// Errors of one node's rows, allocated at the first.
struct Errors {
    rows: Option<Vec<Option<ExprError>>>,
    n: usize,
}

impl Errors {
    fn new(n: usize) -> Errors {
        Errors { rows: None, n }
    }

    fn set(&mut self, i: usize, e: ExprError) {
        let n = self.n;
        self.rows.get_or_insert_with(|| vec![None; n])[i] = Some(e);
    }
}

impl Expr {
    /// Evaluate over the visible rows of `chunk`. The column has a value
    /// for every row of the chunk (NULL for invisible ones); the errors
    /// list the rows that failed, whose value is NULL.
    pub fn eval_chunk(&self, chunk: &StreamChunk) -> (Column, Vec<(usize, ExprError)>) {
        let e = eval(self, chunk);
        let errors = e
            .errors
            .map(|rows| {
                rows.into_iter()
                    .enumerate()
                    .filter_map(|(i, e)| e.map(|e| (i, e)))
                    .collect()
            })
            .unwrap_or_default();
        (e.column, errors)
    }
}

fn eval(expr: &Expr, chunk: &StreamChunk) -> Evaluated {
    let n = chunk.capacity();
    match expr {
        Expr::InputRef { index, .. } => match chunk.columns().get(*index) {
            Some(c) => Evaluated {
                column: c.clone(),
                errors: None,
            },
            None => per_row(expr, chunk),
        },
        Expr::Literal { value, ty } => Evaluated {
            column: Column::repeat(*ty, value, n),
            errors: None,
        },
        Expr::Cast { expr: inner, ty } => {
            let arg = eval(inner, chunk);
            map_rows(chunk, *ty, |i| {
                if let Some(e) = arg.error(i) {
                    return Err(e.clone());
                }
                arg.column.datum(i).map(|v| cast_value(v, *ty)).transpose()
            })
        }
        Expr::Func { func, args, ty } if is_strict(*func) => strict(*func, args, *ty, chunk),
        Expr::Func { func, args, .. }
            if matches!(
                func,
                Func::And | Func::Or | Func::Not | Func::IsNull | Func::IsNotNull
            ) =>
        {
            logical(*func, args, chunk)
        }
        _ => per_row(expr, chunk),
    }
}

/// A column of `ty` holding `f` of each visible row (NULL for the others);
/// a row where `f` fails is NULL and keeps its error.
fn map_rows(
    chunk: &StreamChunk,
    ty: DataType,
    mut f: impl FnMut(usize) -> ExprResult<Datum>,
) -> Evaluated {
    let n = chunk.capacity();
    let mut errors = Errors::new(n);
    let mut out = ColumnBuilder::new(Some(ty), n);
    for i in 0..n {
        if !chunk.is_visible(i) {
            out.push_null();
            continue;
        }
        match f(i) {
            Ok(d) => out.push(datum_ref(&d)),
            Err(e) => {
                errors.set(i, e);
                out.push_null();
            }
        }
    }
    Evaluated {
        column: out.finish(),
        errors: errors.rows,
    }
}

/// [`Expr::eval`] on each visible row, copied out of the columns.
fn per_row(expr: &Expr, chunk: &StreamChunk) -> Evaluated {
    map_rows(chunk, expr.return_type(), |i| expr.eval(&chunk.row(i)))
}

fn arith_op(func: Func) -> Option<ArithOp> {
    Some(match func {
        Func::Add => ArithOp::Add,
        Func::Sub => ArithOp::Sub,
        Func::Mul => ArithOp::Mul,
        Func::Div => ArithOp::Div,
        Func::Mod => ArithOp::Mod,
        _ => return None,
    })
}

fn comparison(func: Func) -> Option<fn(Ordering) -> bool> {
    Some(match func {
        Func::Eq => |o| o == Ordering::Equal,
        Func::NotEq => |o| o != Ordering::Equal,
        Func::Lt => |o| o == Ordering::Less,
        Func::LtEq => |o| o != Ordering::Greater,
        Func::Gt => |o| o == Ordering::Greater,
        Func::GtEq => |o| o != Ordering::Less,
        _ => return None,
    })
}

fn strict(func: Func, args: &[Expr], ty: DataType, chunk: &StreamChunk) -> Evaluated {
    let args: Vec<Evaluated> = args.iter().map(|a| eval(a, chunk)).collect();
    let arith_of = arith_op(func).filter(|_| args.len() == 2);
    let cmp = comparison(func).filter(|_| args.len() == 2);
    map_rows(chunk, ty, |i| {
        // An argument that failed fails the call (the row path stops at
        // the first); a NULL one makes it NULL.
        if let Some(e) = args.iter().find_map(|a| a.error(i)) {
            return Err(e.clone());
        }
        if args.iter().any(|a| a.column.is_null(i)) {
            return Ok(None);
        }
        if let Some(want) = cmp {
            return match (args[0].column.get(i), args[1].column.get(i)) {
                (Some(a), Some(b)) => {
                    let ord = if a.to_owned_type() == b.to_owned_type() {
                        a.cmp(&b)
                    } else {
                        compare(&a.to_owned_scalar(), &b.to_owned_scalar())?
                    };
                    Ok(Some(ScalarValue::Boolean(want(ord))))
                }
                _ => Ok(None),
            };
        }
        if let Some(op) = arith_of {
            return match (args[0].column.datum(i), args[1].column.datum(i)) {
                (Some(a), Some(b)) => arith(op, &a, &b).map(Some),
                _ => Ok(None),
            };
        }
        apply_strict(
            func,
            ty,
            args.iter().filter_map(|a| a.column.datum(i)).collect(),
        )
    })
}

/// AND, OR, NOT, IS [NOT] NULL, as the row path computes them.
fn logical(func: Func, args: &[Expr], chunk: &StreamChunk) -> Evaluated {
    let args: Vec<Evaluated> = args.iter().map(|a| eval(a, chunk)).collect();
    let as_bool = |a: &Evaluated, i: usize| -> ExprResult<Option<bool>> {
        if let Some(e) = a.error(i) {
            return Err(e.clone());
        }
        match a.column.get(i) {
            None => Ok(None),
            Some(ScalarRef::Boolean(b)) => Ok(Some(b)),
            Some(v) => Err(ExprError::new(
                ErrorKind::InternalError,
                format!("expected boolean, got {}", v.to_owned_type()),
            )),
        }
    };
    map_rows(chunk, DataType::Boolean, |i| {
        let result = match func {
            Func::And | Func::Or => {
                // Left to right, stopping where the row path stops: at a
                // failing argument or at the deciding value.
                let stop = func == Func::Or;
                let mut saw_null = false;
                for a in &args {
                    match as_bool(a, i)? {
                        Some(b) if b == stop => return Ok(Some(ScalarValue::Boolean(stop))),
                        Some(_) => {}
                        None => saw_null = true,
                    }
                }
                (!saw_null).then_some(!stop)
            }
            _ => {
                let a = args.first().ok_or_else(|| {
                    ExprError::new(
                        ErrorKind::InternalError,
                        format!("{} without arguments", func.name()),
                    )
                })?;
                if let Some(e) = a.error(i) {
                    return Err(e.clone());
                }
                match func {
                    Func::Not => as_bool(a, i)?.map(|b| !b),
                    Func::IsNull => Some(a.column.is_null(i)),
                    _ => Some(!a.column.is_null(i)),
                }
            }
        };
        Ok(result.map(ScalarValue::Boolean))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_func;

    fn col(index: usize, ty: DataType) -> Expr {
        Expr::InputRef { index, ty }
    }

    fn lit(v: ScalarValue) -> Expr {
        let ty = v.data_type();
        Expr::Literal { value: Some(v), ty }
    }

    /// Every expression gives, row by row, what the row path gives.
    #[test]
    fn columnar_evaluation_matches_the_row_path() {
        let ty = [DataType::Int64, DataType::Int64, DataType::Varchar];
        let chunk = StreamChunk::from_pretty(
            "+ 1 2 a
             + 9223372036854775807 1 b
             + . 3 .
             - 4 0 dd
             + 0 . e",
            &ty,
        );
        let f = |func, args| build_func(func, args).expect("builds");
        let (a, b, s) = (
            col(0, DataType::Int64),
            col(1, DataType::Int64),
            col(2, DataType::Varchar),
        );
        let exprs = vec![
            f(Func::Add, vec![a.clone(), b.clone()]),
            f(Func::Div, vec![a.clone(), b.clone()]),
            f(Func::Mod, vec![a.clone(), lit(ScalarValue::Int64(3))]),
            f(Func::Lt, vec![a.clone(), b.clone()]),
            f(Func::Eq, vec![s.clone(), lit(ScalarValue::varchar("dd"))]),
            f(Func::Upper, vec![s.clone()]),
            f(
                Func::And,
                vec![
                    f(Func::NotEq, vec![b.clone(), lit(ScalarValue::Int64(0))]),
                    f(
                        Func::Gt,
                        vec![
                            f(Func::Div, vec![a.clone(), b.clone()]),
                            lit(ScalarValue::Int64(0)),
                        ],
                    ),
                ],
            ),
            f(
                Func::Or,
                vec![
                    f(
                        Func::Gt,
                        vec![f(Func::Add, vec![a.clone(), b.clone()]), a.clone()],
                    ),
                    f(Func::IsNull, vec![a.clone()]),
                ],
            ),
            f(Func::Coalesce, vec![a.clone(), b.clone()]),
            f(Func::Not, vec![f(Func::IsNotNull, vec![s.clone()])]),
        ];
        for e in exprs {
            let (column, errors) = e.eval_chunk(&chunk);
            for i in 0..chunk.capacity() {
                let want = e.eval(&chunk.row(i));
                let failed = errors.iter().find(|(r, _)| *r == i);
                match want {
                    Ok(d) => {
                        assert!(failed.is_none(), "{e:?} row {i}");
                        assert_eq!(column.datum(i), d, "{e:?} row {i}");
                    }
                    Err(want) => {
                        let (_, got) = failed.unwrap_or_else(|| panic!("{e:?} row {i}"));
                        assert_eq!(
                            (got.kind(), &got.to_string()),
                            (want.kind(), &want.to_string())
                        );
                        assert_eq!(column.datum(i), None);
                    }
                }
            }
        }
    }
}
