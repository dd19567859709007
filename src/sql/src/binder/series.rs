//! `generate_series(start, stop [, step])` in FROM, over integer
//! constants (as drivers use it to number the elements of a constant
//! array: pgJDBC's type cache numbers `current_schemas(false)`), and
//! `generate_series(start, stop, step interval)` over timestamp or
//! timestamptz constants (a timestamptz series steps in the session
//! zone, as PostgreSQL's): bound into its rows (a `VALUES`).

use ebbflow_common::ErrorKind;
use sqlparser::ast::{FunctionArg, FunctionArgExpr};

use super::scope::Scope;
use super::Binder;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field, ScalarValue};
use ebbflow_expr::{build_func, Expr, Func};
use ebbflow_planner::logical::LogicalPlan;

/// More rows than this from one call is refused (program_limit_exceeded): the rows are
/// built while binding.
const MAX_ROWS: i64 = 1_000_000;

impl Binder<'_> {
    /// The rows of `generate_series(args)`, as a relation named `name`
    /// with one column `generate_series`.
    pub(super) fn bind_generate_series(
        &mut self,
        name: &str,
        args: &[FunctionArg],
    ) -> SqlResult<(LogicalPlan, Scope)> {
        if !(2..=3).contains(&args.len()) {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function generate_series with {} arguments does not exist",
                    args.len()
                ),
            ));
        }
        if let Some(t) = self.series_time_type(&args[0])? {
            return self.bind_time_series(name, args, t);
        }
        let mut values = Vec::with_capacity(3);
        let mut ty = DataType::Int32;
        for a in args {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::unsupported("named arguments of generate_series"));
            };
            let b = self.bind_expr(&Scope::default(), e)?;
            let e = self.resolve(b, DataType::Int32)?;
            if !e.return_type().is_integer() {
                return Err(SqlError::unsupported(format!(
                    "generate_series over {}",
                    e.return_type().pg_name()
                )));
            }
            if e.return_type() == DataType::Int64 {
                ty = DataType::Int64;
            }
            match e {
                Expr::Literal { value, .. } => values.push(value.and_then(|v| v.as_i64())),
                _ => {
                    return Err(SqlError::unsupported(
                        "generate_series with non-constant arguments",
                    ))
                }
            }
        }
        let (start, stop, step) = match values.as_slice() {
            [a, b] => (*a, *b, Some(1)),
            [a, b, c] => (*a, *b, *c),
            _ => (None, None, None),
        };
        let mut rows = Vec::new();
        if let (Some(start), Some(stop), Some(step)) = (start, stop, step) {
            if step == 0 {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameterValue,
                    "step size cannot equal zero",
                ));
            }
            let count = if (step > 0 && start > stop) || (step < 0 && start < stop) {
                0
            } else {
                (i128::from(stop) - i128::from(start)) / i128::from(step) + 1
            };
            if count > i128::from(MAX_ROWS) {
                return Err(SqlError::new(
                    ErrorKind::ProgramLimitExceeded,
                    format!("generate_series of more than {MAX_ROWS} rows"),
                ));
            }
            let mut v = start;
            for _ in 0..count {
                let value = match ty {
                    DataType::Int64 => ScalarValue::Int64(v),
                    _ => ScalarValue::Int32(i32::try_from(v).map_err(|_| {
                        SqlError::new(ErrorKind::NumericValueOutOfRange, "integer out of range")
                    })?),
                };
                rows.push(vec![Expr::literal(Some(value), ty)]);
                v = v.saturating_add(step);
            }
        }
        Ok(series_relation(name, rows, ty))
    }
}

impl Binder<'_> {
    /// The type of a timestamp series' start (`None` for a number).
    fn series_time_type(&mut self, first: &FunctionArg) -> SqlResult<Option<DataType>> {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = first else {
            return Ok(None);
        };
        let b = self.bind_expr(&Scope::default(), e)?;
        Ok(match b.hint() {
            Some(DataType::Timestamptz) => Some(DataType::Timestamptz),
            Some(DataType::Timestamp | DataType::Date) => Some(DataType::Timestamp),
            _ => None,
        })
    }

    /// `generate_series(start, stop, step)` over timestamps of type `ty`.
    fn bind_time_series(
        &mut self,
        name: &str,
        args: &[FunctionArg],
        ty: DataType,
    ) -> SqlResult<(LogicalPlan, Scope)> {
        let [start, stop, step] = args else {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!("function generate_series({}, {}) does not exist", ty, ty),
            ));
        };
        let mut constant = |a: &FunctionArg, want: DataType| -> SqlResult<Expr> {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
                return Err(SqlError::unsupported("named arguments of generate_series"));
            };
            let b = self.bind_expr(&Scope::default(), e)?;
            let e = ebbflow_expr::build_cast(self.resolve(b, want)?, want, false)?;
            match e {
                Expr::Literal { .. } => Ok(e),
                _ => Err(SqlError::unsupported(
                    "generate_series with non-constant arguments",
                )),
            }
        };
        let (start, stop, step) = (
            constant(start, ty)?,
            constant(stop, ty)?,
            constant(step, DataType::Interval)?,
        );
        let value = |e: &Expr| match e {
            Expr::Literal { value, .. } => value.clone(),
            _ => None,
        };
        let mut rows = Vec::new();
        if let (Some(first), Some(last), Some(ScalarValue::Interval(i))) =
            (value(&start), value(&stop), value(&step))
        {
            if i.total_micros() == 0 {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameterValue,
                    "step size cannot equal zero",
                ));
            }
            let up = i.total_micros() > 0;
            // Each next value is the previous plus the step, in the
            // session zone for timestamptz.
            let next = build_func(Func::Add, vec![Expr::input_ref(0, ty), step.clone()])?;
            let mut cur = first;
            while if up { cur <= last } else { cur >= last } {
                if rows.len() as i64 >= MAX_ROWS {
                    return Err(SqlError::new(
                        ErrorKind::ProgramLimitExceeded,
                        format!("generate_series of more than {MAX_ROWS} rows"),
                    ));
                }
                rows.push(vec![Expr::literal(Some(cur.clone()), ty)]);
                match next.eval(&vec![Some(cur)])? {
                    Some(v) => cur = v,
                    None => break,
                }
            }
        }
        Ok(series_relation(name, rows, ty))
    }
}

/// The rows of a series as a relation named `name` with one column
/// `generate_series`.
fn series_relation(name: &str, rows: Vec<Vec<Expr>>, ty: DataType) -> (LogicalPlan, Scope) {
    let column = "generate_series".to_string();
    let plan = LogicalPlan::Values {
        rows,
        fields: vec![Field::new(column.clone(), ty)],
    };
    let scope = Scope::of_relation(Some(name), [(column, ty, false)]);
    (plan, scope)
}

/// Whether a FROM item's function name is `[pg_catalog.]generate_series`.
pub(super) fn is_generate_series(schema: Option<&str>, name: &str) -> bool {
    name == "generate_series" && schema.is_none_or(|s| s == "pg_catalog")
}
