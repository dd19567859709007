//! Evaluation of [`Expr`] over a row.

use super::{Expr, ExprResult};
use crate::common::{Datum, Row};

impl Expr {
    /// Evaluate over one input row.
    pub fn eval(&self, row: &Row) -> ExprResult<Datum> {
        match self {
            Expr::InputRef { index, .. } => Ok(row[*index].clone()),
            Expr::Literal { value, .. } => Ok(value.clone()),
            _ => todo!("expr eval"),
        }
    }

    /// Evaluate a predicate: true only when the result is TRUE (NULL and
    /// FALSE both reject the row, as in a WHERE clause).
    pub fn eval_predicate(&self, row: &Row) -> ExprResult<bool> {
        Ok(matches!(
            self.eval(row)?,
            Some(crate::common::ScalarValue::Boolean(true))
        ))
    }
}
