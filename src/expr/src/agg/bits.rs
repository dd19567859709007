//! The logical aggregates: `bool_and`/`bool_or` and
//! `bit_and`/`bit_or`/`bit_xor`, counting their inputs so that a
//! retraction is exact.

use super::{get_i64, Accumulator, AggKind, ExprError, ExprResult};
use ebbflow_common::ErrorKind;
use ebbflow_common::{DataType, Datum, Row, ScalarValue};

/// `bool_and(x)`/`bool_or(x)`: how many current inputs are true and how
/// many false, so that a retraction is exact.
#[derive(Clone, Debug)]
pub(super) struct BoolAndOr {
    and: bool,
    trues: i64,
    falses: i64,
}

impl BoolAndOr {
    pub(super) fn new(kind: AggKind) -> Self {
        BoolAndOr {
            and: kind == AggKind::BoolAnd,
            trues: 0,
            falses: 0,
        }
    }
}

impl Accumulator for BoolAndOr {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        let sign = if insert { 1 } else { -1 };
        match value {
            None => {}
            Some(ScalarValue::Boolean(true)) => self.trues += sign,
            Some(ScalarValue::Boolean(false)) => self.falses += sign,
            Some(v) => {
                return Err(ExprError::new(
                    ErrorKind::InternalError,
                    format!("unexpected {} input to bool_and/bool_or", v.data_type()),
                ))
            }
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        if self.trues + self.falses <= 0 {
            return Ok(None);
        }
        Ok(Some(ScalarValue::Boolean(if self.and {
            self.falses == 0
        } else {
            self.trues > 0
        })))
    }
    fn save(&self) -> Row {
        vec![
            Some(ScalarValue::Int64(self.trues)),
            Some(ScalarValue::Int64(self.falses)),
        ]
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        self.trues = get_i64(state, 0)?;
        self.falses = get_i64(state, 1)?;
        Ok(())
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}

/// `bit_and(x)`/`bit_or(x)`/`bit_xor(x)` of integers. `bit_xor` keeps the
/// running xor (a retraction xors the value out again); `bit_and` and
/// `bit_or` keep, per bit, how many current inputs have it set: a bit is
/// in the AND when all `n` inputs have it, in the OR when any has.
#[derive(Clone, Debug)]
pub(super) struct Bits {
    kind: AggKind,
    return_type: DataType,
    /// Current non-null inputs.
    n: i64,
    xor: i64,
    /// Per bit (0 = lowest), inputs that have it set; empty for `bit_xor`.
    ones: Vec<i64>,
}

impl Bits {
    pub(super) fn new(kind: AggKind, return_type: DataType) -> Self {
        Bits {
            kind,
            return_type,
            n: 0,
            xor: 0,
            ones: if kind == AggKind::BitXor {
                Vec::new()
            } else {
                vec![0; 64]
            },
        }
    }
}

impl Accumulator for Bits {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        let Some(v) = value else {
            return Ok(());
        };
        let x = v.as_i64().ok_or_else(|| {
            ExprError::new(
                ErrorKind::InternalError,
                format!("unexpected {} input to a bit aggregate", v.data_type()),
            )
        })?;
        let sign = if insert { 1 } else { -1 };
        self.n += sign;
        self.xor ^= x;
        for (bit, ones) in self.ones.iter_mut().enumerate() {
            if x >> bit & 1 == 1 {
                *ones += sign;
            }
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        if self.n <= 0 {
            return Ok(None);
        }
        let bits = |keep: &dyn Fn(i64) -> bool| {
            self.ones
                .iter()
                .enumerate()
                .filter(|(_, &ones)| keep(ones))
                .fold(0i64, |acc, (bit, _)| acc | 1 << bit)
        };
        let x = match self.kind {
            AggKind::BitAnd => bits(&|ones| ones == self.n),
            AggKind::BitOr => bits(&|ones| ones > 0),
            _ => self.xor,
        };
        // Inputs are sign-extended to 64 bits, so the result narrows back
        // exactly.
        Ok(Some(match self.return_type {
            DataType::Int16 => ScalarValue::Int16(x as i16),
            DataType::Int32 => ScalarValue::Int32(x as i32),
            _ => ScalarValue::Int64(x),
        }))
    }
    fn save(&self) -> Row {
        let mut row = vec![
            Some(ScalarValue::Int64(self.n)),
            Some(ScalarValue::Int64(self.xor)),
        ];
        row.extend(self.ones.iter().map(|&c| Some(ScalarValue::Int64(c))));
        row
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        self.n = get_i64(state, 0)?;
        self.xor = get_i64(state, 1)?;
        for (i, ones) in self.ones.iter_mut().enumerate() {
            *ones = get_i64(state, 2 + i)?;
        }
        Ok(())
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}
