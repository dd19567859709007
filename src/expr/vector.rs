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

use std::cmp::Ordering;

use super::arith::{arith, ArithOp};
use super::build::Func;
use super::cast::cast_value;
use super::eval::{apply_strict, compare, is_strict};
use super::{Expr, ExprError, ExprResult};
use crate::common::{Column, ColumnBuilder, DataType, ScalarRef, ScalarValue, StreamChunk};

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
            let mut errors = Errors::new(n);
            let mut out = ColumnBuilder::new(Some(*ty), n);
            for i in 0..n {
                if !chunk.is_visible(i) {
                    out.push_null();
                    continue;
                }
                if let Some(e) = arg.error(i) {
                    errors.set(i, e.clone());
                    out.push_null();
                    continue;
                }
                match arg.column.datum(i).map(|v| cast_value(v, *ty)).transpose() {
                    Ok(d) => out.push(d.as_ref().map(ScalarValue::as_scalar_ref)),
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

/// [`Expr::eval`] on each visible row, copied out of the columns.
fn per_row(expr: &Expr, chunk: &StreamChunk) -> Evaluated {
    let n = chunk.capacity();
    let mut errors = Errors::new(n);
    let mut out = ColumnBuilder::new(Some(expr.return_type()), n);
    for i in 0..n {
        if !chunk.is_visible(i) {
            out.push_null();
            continue;
        }
        match expr.eval(&chunk.row(i)) {
            Ok(d) => out.push(d.as_ref().map(ScalarValue::as_scalar_ref)),
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
    let n = chunk.capacity();
    let args: Vec<Evaluated> = args.iter().map(|a| eval(a, chunk)).collect();
    let mut errors = Errors::new(n);
    let mut out = ColumnBuilder::new(Some(ty), n);
    let arith_of = arith_op(func).filter(|_| args.len() == 2);
    let cmp = comparison(func).filter(|_| args.len() == 2);
    'rows: for i in 0..n {
        if !chunk.is_visible(i) {
            out.push_null();
            continue;
        }
        // An argument that failed fails the call (the row path stops at
        // the first); a NULL one makes it NULL.
        let mut null = false;
        for a in &args {
            if let Some(e) = a.error(i) {
                errors.set(i, e.clone());
                out.push_null();
                continue 'rows;
            }
            null |= a.column.is_null(i);
        }
        if null {
            out.push_null();
            continue;
        }
        let result: ExprResult<Option<ScalarValue>> = if let Some(want) = cmp {
            match (args[0].column.get(i), args[1].column.get(i)) {
                (Some(a), Some(b)) => {
                    let same = a.to_owned_type() == b.to_owned_type();
                    let ord = if same {
                        Ok(a.cmp(&b))
                    } else {
                        compare(&a.to_owned_scalar(), &b.to_owned_scalar())
                    };
                    ord.map(|o| Some(ScalarValue::Boolean(want(o))))
                }
                _ => Ok(None),
            }
        } else if let Some(op) = arith_of {
            match (args[0].column.datum(i), args[1].column.datum(i)) {
                (Some(a), Some(b)) => arith(op, &a, &b).map(Some),
                _ => Ok(None),
            }
        } else {
            let vals = args.iter().filter_map(|a| a.column.datum(i)).collect();
            apply_strict(func, ty, vals)
        };
        match result {
            Ok(Some(v)) => out.push(Some(v.as_scalar_ref())),
            Ok(None) => out.push_null(),
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

/// AND, OR, NOT, IS [NOT] NULL, as the row path computes them.
fn logical(func: Func, args: &[Expr], chunk: &StreamChunk) -> Evaluated {
    let n = chunk.capacity();
    let args: Vec<Evaluated> = args.iter().map(|a| eval(a, chunk)).collect();
    let mut errors = Errors::new(n);
    let mut out = ColumnBuilder::new(Some(DataType::Boolean), n);
    let as_bool = |a: &Evaluated, i: usize| -> Result<Option<bool>, ExprError> {
        match a.column.get(i) {
            None => Ok(None),
            Some(ScalarRef::Boolean(b)) => Ok(Some(b)),
            Some(v) => Err(ExprError::new(
                "XX000",
                format!("expected boolean, got {}", v.to_owned_type()),
            )),
        }
    };
    for i in 0..n {
        if !chunk.is_visible(i) {
            out.push_null();
            continue;
        }
        let result: Result<Option<bool>, ExprError> = match func {
            Func::And | Func::Or => {
                let stop = func == Func::Or;
                let mut saw_null = false;
                let mut decided = None;
                for a in &args {
                    if let Some(e) = a.error(i) {
                        decided = Some(Err(e.clone()));
                        break;
                    }
                    match as_bool(a, i) {
                        Err(e) => {
                            decided = Some(Err(e));
                            break;
                        }
                        Ok(Some(b)) if b == stop => {
                            decided = Some(Ok(Some(stop)));
                            break;
                        }
                        Ok(Some(_)) => {}
                        Ok(None) => saw_null = true,
                    }
                }
                decided.unwrap_or(Ok(if saw_null { None } else { Some(!stop) }))
            }
            _ => match args.first() {
                None => Err(ExprError::new(
                    "XX000",
                    format!("{} without arguments", func.name()),
                )),
                Some(a) => match a.error(i) {
                    Some(e) => Err(e.clone()),
                    None => match func {
                        Func::Not => as_bool(a, i).map(|b| b.map(|b| !b)),
                        Func::IsNull => Ok(Some(a.column.is_null(i))),
                        _ => Ok(Some(!a.column.is_null(i))),
                    },
                },
            },
        };
        match result {
            Ok(b) => out.push(b.map(ScalarRef::Boolean)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::build_func;

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
                        assert_eq!((got.code, &got.message), (want.code, &want.message));
                        assert_eq!(column.datum(i), None);
                    }
                }
            }
        }
    }
}
