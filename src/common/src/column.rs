//! The columns of a chunk, on Apache Arrow arrays.
//!
//! A [`Column`] holds one SQL type's values in an Arrow array: the integer,
//! float, boolean, date and timestamp types in Arrow's own arrays; `varchar`
//! in a UTF-8 string array; `numeric` and `interval`, whose PostgreSQL
//! values Arrow's decimal and interval arrays cannot all hold (a numeric's
//! scale varies per value; an interval's microseconds can exceed Arrow's
//! nanoseconds), in 16-byte fixed-size binary arrays of their exact form. A
//! column built from rows without a type (only NULLs were seen) is
//! [`Column::Null`]. Arrays are reference counted: cloning a column, or
//! handing it to another operator, copies no values.
//!
//! Arrays are not Arrow list arrays but an owned column of shared array
//! values ([`ArrayColumn`]): they are rare, small, and mostly passed
//! through, and a value is then one reference count away from a datum.
//!
//! [`ScalarRef`] is a borrowed view of one value, so a key can be hashed or
//! compared from a column without building a [`ScalarValue`].

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, FixedSizeBinaryBuilder, Float32Builder,
    Float64Builder, Int16Builder, Int32Builder, Int64Builder, StringBuilder,
    Time64MicrosecondBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Time64MicrosecondType,
    TimestampMicrosecondType,
};
use arrow_array::{
    Array, BinaryArray, BooleanArray, Date32Array, FixedSizeBinaryArray, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, StringArray, Time64MicrosecondArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::NullBuffer;
use chrono::{DateTime, NaiveDate, NaiveDateTime};

use super::types::{ArrayValue, DataType, Datum, ElemType, Interval, Numeric, ScalarValue, F64};
use crate::jsonb::Jsonb;

/// A borrowed non-null value: a [`ScalarValue`] whose text is not copied.
/// Equality, order and hash agree with [`ScalarValue`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarRef<'a> {
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Float32(F64),
    Float64(F64),
    Decimal(Numeric),
    Varchar(&'a str),
    Boolean(bool),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
    Interval(Interval),
    Array(&'a Arc<ArrayValue>),
    Timestamptz(i64),
    Jsonb(&'a Arc<Jsonb>),
    Uuid(u128),
    Bytea(&'a [u8]),
    Time(i64),
}

/// A nullable borrowed value.
pub type DatumRef<'a> = Option<ScalarRef<'a>>;

impl ScalarValue {
    pub fn as_scalar_ref(&self) -> ScalarRef<'_> {
        match self {
            ScalarValue::Int16(v) => ScalarRef::Int16(*v),
            ScalarValue::Int32(v) => ScalarRef::Int32(*v),
            ScalarValue::Int64(v) => ScalarRef::Int64(*v),
            ScalarValue::Float32(v) => ScalarRef::Float32(*v),
            ScalarValue::Float64(v) => ScalarRef::Float64(*v),
            ScalarValue::Decimal(v) => ScalarRef::Decimal(*v),
            ScalarValue::Varchar(v) => ScalarRef::Varchar(v),
            ScalarValue::Boolean(v) => ScalarRef::Boolean(*v),
            ScalarValue::Date(v) => ScalarRef::Date(*v),
            ScalarValue::Timestamp(v) => ScalarRef::Timestamp(*v),
            ScalarValue::Interval(v) => ScalarRef::Interval(*v),
            ScalarValue::Array(v) => ScalarRef::Array(v),
            ScalarValue::Timestamptz(v) => ScalarRef::Timestamptz(*v),
            ScalarValue::Jsonb(v) => ScalarRef::Jsonb(v),
            ScalarValue::Uuid(v) => ScalarRef::Uuid(*v),
            ScalarValue::Bytea(v) => ScalarRef::Bytea(v),
            ScalarValue::Time(v) => ScalarRef::Time(*v),
        }
    }
}

/// The borrowed view of a datum.
pub fn datum_ref(d: &Datum) -> DatumRef<'_> {
    d.as_ref().map(ScalarValue::as_scalar_ref)
}

impl ScalarRef<'_> {
    pub fn to_owned_scalar(self) -> ScalarValue {
        match self {
            ScalarRef::Int16(v) => ScalarValue::Int16(v),
            ScalarRef::Int32(v) => ScalarValue::Int32(v),
            ScalarRef::Int64(v) => ScalarValue::Int64(v),
            ScalarRef::Float32(v) => ScalarValue::Float32(v),
            ScalarRef::Float64(v) => ScalarValue::Float64(v),
            ScalarRef::Decimal(v) => ScalarValue::Decimal(v),
            ScalarRef::Varchar(v) => ScalarValue::Varchar(Arc::from(v)),
            ScalarRef::Boolean(v) => ScalarValue::Boolean(v),
            ScalarRef::Date(v) => ScalarValue::Date(v),
            ScalarRef::Timestamp(v) => ScalarValue::Timestamp(v),
            ScalarRef::Interval(v) => ScalarValue::Interval(v),
            ScalarRef::Array(v) => ScalarValue::Array(Arc::clone(v)),
            ScalarRef::Timestamptz(v) => ScalarValue::Timestamptz(v),
            ScalarRef::Jsonb(v) => ScalarValue::Jsonb(Arc::clone(v)),
            ScalarRef::Uuid(v) => ScalarValue::Uuid(v),
            ScalarRef::Bytea(v) => ScalarValue::Bytea(Arc::from(v)),
            ScalarRef::Time(v) => ScalarValue::Time(v),
        }
    }
}

const EPOCH: NaiveDate = match NaiveDate::from_ymd_opt(1970, 1, 1) {
    Some(d) => d,
    None => panic!("1970-01-01 is a date"),
};

fn date_to_days(d: NaiveDate) -> i32 {
    // Every NaiveDate is within ±2^18 years: its day number fits an i32.
    (d - EPOCH).num_days() as i32
}

fn days_to_date(days: i32) -> NaiveDate {
    EPOCH
        .checked_add_signed(chrono::TimeDelta::days(days as i64))
        .unwrap_or(EPOCH)
}

fn micros_to_timestamp(micros: i64) -> NaiveDateTime {
    DateTime::from_timestamp_micros(micros)
        .map(|t| t.naive_utc())
        .unwrap_or_default()
}

fn interval_bytes(i: &Interval) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&i.months.to_le_bytes());
    b[4..8].copy_from_slice(&i.days.to_le_bytes());
    b[8..].copy_from_slice(&i.micros.to_le_bytes());
    b
}

fn interval_from_bytes(b: &[u8]) -> Interval {
    let mut m = [0u8; 4];
    let mut d = [0u8; 4];
    let mut u = [0u8; 8];
    m.copy_from_slice(&b[..4]);
    d.copy_from_slice(&b[4..8]);
    u.copy_from_slice(&b[8..16]);
    Interval {
        months: i32::from_le_bytes(m),
        days: i32::from_le_bytes(d),
        micros: i64::from_le_bytes(u),
    }
}

fn decimal_from_bytes(b: &[u8]) -> Numeric {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    Numeric::from_bytes(a)
}

/// One column of a chunk.
#[derive(Clone, Debug)]
pub enum Column {
    /// Only NULLs, of no known type: `len` of them.
    Null(usize),
    Int16(Int16Array),
    Int32(Int32Array),
    Int64(Int64Array),
    Float32(Float32Array),
    Float64(Float64Array),
    /// `rust_decimal`'s 16-byte serialized form.
    Decimal(FixedSizeBinaryArray),
    Varchar(StringArray),
    Boolean(BooleanArray),
    /// Days since 1970-01-01.
    Date(Date32Array),
    /// Microseconds since 1970-01-01 00:00 (PostgreSQL's precision).
    Timestamp(TimestampMicrosecondArray),
    /// Months (i32), days (i32), microseconds (i64), little-endian.
    Interval(FixedSizeBinaryArray),
    Array(ArrayColumn),
    /// Microseconds since 1970-01-01 00:00 UTC.
    Timestamptz(TimestampMicrosecondArray),
    /// Shared values, `None` for NULL (as arrays are kept).
    Jsonb(Arc<[Option<Arc<Jsonb>>]>),
    /// The 16 bytes, big-endian.
    Uuid(FixedSizeBinaryArray),
    Bytea(BinaryArray),
    /// Microseconds since midnight.
    Time(Time64MicrosecondArray),
}

/// A column of arrays: shared array values, `None` for NULL.
#[derive(Clone, Debug)]
pub struct ArrayColumn {
    pub elem: ElemType,
    pub values: Arc<[Option<Arc<ArrayValue>>]>,
}

impl Column {
    fn array(&self) -> Option<&dyn Array> {
        Some(match self {
            Column::Null(_) => return None,
            Column::Int16(a) => a,
            Column::Int32(a) => a,
            Column::Int64(a) => a,
            Column::Float32(a) => a,
            Column::Float64(a) => a,
            Column::Decimal(a) | Column::Uuid(a) => a,
            Column::Bytea(a) => a,
            Column::Time(a) => a,
            Column::Varchar(a) => a,
            Column::Boolean(a) => a,
            Column::Date(a) => a,
            Column::Timestamp(a) | Column::Timestamptz(a) => a,
            Column::Interval(a) => a,
            Column::Array(_) | Column::Jsonb(_) => return None,
        })
    }

    pub fn len(&self) -> usize {
        match self {
            Column::Null(n) => *n,
            Column::Array(a) => a.values.len(),
            Column::Jsonb(v) => v.len(),
            other => other.array().map_or(0, |a| a.len()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The SQL type, unless the column was built from NULLs alone.
    pub fn data_type(&self) -> Option<DataType> {
        Some(match self {
            Column::Null(_) => return None,
            Column::Int16(_) => DataType::Int16,
            Column::Int32(_) => DataType::Int32,
            Column::Int64(_) => DataType::Int64,
            Column::Float32(_) => DataType::Float32,
            Column::Float64(_) => DataType::Float64,
            Column::Decimal(_) => DataType::Decimal,
            Column::Varchar(_) => DataType::Varchar,
            Column::Boolean(_) => DataType::Boolean,
            Column::Date(_) => DataType::Date,
            Column::Timestamp(_) => DataType::Timestamp,
            Column::Interval(_) => DataType::Interval,
            Column::Array(a) => DataType::Array(a.elem),
            Column::Timestamptz(_) => DataType::Timestamptz,
            Column::Jsonb(_) => DataType::Jsonb,
            Column::Uuid(_) => DataType::Uuid,
            Column::Bytea(_) => DataType::Bytea,
            Column::Time(_) => DataType::Time,
        })
    }

    /// The validity bitmap (`None`: no NULLs, or a column of NULLs only),
    /// through each array's own type rather than `dyn Array`: per-row
    /// callers want it inlined.
    fn nulls(&self) -> Option<&NullBuffer> {
        match self {
            Column::Null(_) | Column::Array(_) | Column::Jsonb(_) => None,
            Column::Int16(a) => a.nulls(),
            Column::Int32(a) => a.nulls(),
            Column::Int64(a) => a.nulls(),
            Column::Float32(a) => a.nulls(),
            Column::Float64(a) => a.nulls(),
            Column::Decimal(a) | Column::Uuid(a) => a.nulls(),
            Column::Bytea(a) => a.nulls(),
            Column::Time(a) => a.nulls(),
            Column::Varchar(a) => a.nulls(),
            Column::Boolean(a) => a.nulls(),
            Column::Date(a) => a.nulls(),
            Column::Timestamp(a) | Column::Timestamptz(a) => a.nulls(),
            Column::Interval(a) => a.nulls(),
        }
    }

    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Column::Null(_) => true,
            Column::Array(a) => a.values.get(i).is_none_or(Option::is_none),
            Column::Jsonb(v) => v.get(i).is_none_or(Option::is_none),
            _ => self.nulls().is_some_and(|n| n.is_null(i)),
        }
    }

    /// How many values are NULL.
    pub fn null_count(&self) -> usize {
        match self {
            Column::Null(n) => *n,
            Column::Array(a) => a.values.iter().filter(|v| v.is_none()).count(),
            Column::Jsonb(v) => v.iter().filter(|v| v.is_none()).count(),
            _ => self.nulls().map_or(0, |n| n.null_count()),
        }
    }

    /// Value `i`, borrowed.
    pub fn get(&self, i: usize) -> DatumRef<'_> {
        if self.is_null(i) {
            return None;
        }
        Some(match self {
            Column::Null(_) => return None,
            Column::Int16(a) => ScalarRef::Int16(a.value(i)),
            Column::Int32(a) => ScalarRef::Int32(a.value(i)),
            Column::Int64(a) => ScalarRef::Int64(a.value(i)),
            Column::Float32(a) => ScalarRef::Float32(F64(a.value(i) as f64)),
            Column::Float64(a) => ScalarRef::Float64(F64(a.value(i))),
            Column::Decimal(a) => ScalarRef::Decimal(decimal_from_bytes(a.value(i))),
            Column::Varchar(a) => ScalarRef::Varchar(a.value(i)),
            Column::Boolean(a) => ScalarRef::Boolean(a.value(i)),
            Column::Date(a) => ScalarRef::Date(days_to_date(a.value(i))),
            Column::Timestamp(a) => ScalarRef::Timestamp(micros_to_timestamp(a.value(i))),
            Column::Interval(a) => ScalarRef::Interval(interval_from_bytes(a.value(i))),
            Column::Array(a) => ScalarRef::Array(a.values.get(i)?.as_ref()?),
            Column::Timestamptz(a) => ScalarRef::Timestamptz(a.value(i)),
            Column::Jsonb(v) => ScalarRef::Jsonb(v.get(i)?.as_ref()?),
            Column::Uuid(a) => ScalarRef::Uuid(u128::from_be_bytes(a.value(i).try_into().ok()?)),
            Column::Bytea(a) => ScalarRef::Bytea(a.value(i)),
            Column::Time(a) => ScalarRef::Time(a.value(i)),
        })
    }

    /// Value `i`, owned.
    pub fn datum(&self, i: usize) -> Datum {
        self.get(i).map(ScalarRef::to_owned_scalar)
    }

    /// A column of `n` copies of `value`.
    pub fn repeat(ty: DataType, value: &Datum, n: usize) -> Column {
        let mut b = ColumnBuilder::new(Some(ty), n);
        for _ in 0..n {
            b.push(datum_ref(value));
        }
        b.finish()
    }

    /// The rows whose `mask` bit is set (a mask of this column's length).
    pub fn filter(&self, mask: &BooleanArray) -> Column {
        if let Column::Jsonb(v) = self {
            return Column::Jsonb(
                v.iter()
                    .zip(mask.iter())
                    .filter(|(_, keep)| keep.unwrap_or(false))
                    .map(|(v, _)| v.clone())
                    .collect(),
            );
        }
        if let Column::Array(a) = self {
            let values = a
                .values
                .iter()
                .zip(mask.iter())
                .filter(|(_, keep)| keep.unwrap_or(false))
                .map(|(v, _)| v.clone())
                .collect();
            return Column::Array(ArrayColumn {
                elem: a.elem,
                values,
            });
        }
        let Some(array) = self.array() else {
            return Column::Null(mask.true_count());
        };
        // Lengths agree by construction (the chunk checks them), so the
        // filter kernel cannot fail; a mismatch yields an all-NULL column.
        let Ok(out) = arrow_select::filter::filter(array, mask) else {
            debug_assert!(false, "filter mask of another length");
            return Column::Null(mask.true_count());
        };
        match self {
            Column::Null(_) | Column::Array(_) | Column::Jsonb(_) => Column::Null(out.len()),
            Column::Int16(_) => Column::Int16(out.as_primitive::<Int16Type>().clone()),
            Column::Int32(_) => Column::Int32(out.as_primitive::<Int32Type>().clone()),
            Column::Int64(_) => Column::Int64(out.as_primitive::<Int64Type>().clone()),
            Column::Float32(_) => Column::Float32(out.as_primitive::<Float32Type>().clone()),
            Column::Float64(_) => Column::Float64(out.as_primitive::<Float64Type>().clone()),
            Column::Decimal(_) => Column::Decimal(out.as_fixed_size_binary().clone()),
            Column::Uuid(_) => Column::Uuid(out.as_fixed_size_binary().clone()),
            Column::Bytea(_) => Column::Bytea(out.as_binary::<i32>().clone()),
            Column::Time(_) => Column::Time(out.as_primitive::<Time64MicrosecondType>().clone()),
            Column::Varchar(_) => Column::Varchar(out.as_string::<i32>().clone()),
            Column::Boolean(_) => Column::Boolean(out.as_boolean().clone()),
            Column::Date(_) => Column::Date(out.as_primitive::<Date32Type>().clone()),
            Column::Timestamp(_) => {
                Column::Timestamp(out.as_primitive::<TimestampMicrosecondType>().clone())
            }
            Column::Interval(_) => Column::Interval(out.as_fixed_size_binary().clone()),
            Column::Timestamptz(_) => {
                Column::Timestamptz(out.as_primitive::<TimestampMicrosecondType>().clone())
            }
        }
    }
}

/// Builds a [`Column`] value by value. Built with a type, or without one,
/// in which case the first non-NULL value picks it.
pub struct ColumnBuilder {
    inner: Builder,
    capacity: usize,
}

enum Builder {
    /// No type yet: this many NULLs so far.
    Untyped(usize),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Decimal(FixedSizeBinaryBuilder),
    Varchar(StringBuilder),
    Boolean(BooleanBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
    Interval(FixedSizeBinaryBuilder),
    Array(ElemType, Vec<Option<Arc<ArrayValue>>>),
    Timestamptz(TimestampMicrosecondBuilder),
    Jsonb(Vec<Option<Arc<Jsonb>>>),
    Uuid(FixedSizeBinaryBuilder),
    Bytea(BinaryBuilder),
    Time(Time64MicrosecondBuilder),
}

impl Builder {
    fn typed(ty: DataType, n: usize) -> Builder {
        match ty {
            DataType::Int16 => Builder::Int16(Int16Builder::with_capacity(n)),
            DataType::Int32 => Builder::Int32(Int32Builder::with_capacity(n)),
            DataType::Int64 => Builder::Int64(Int64Builder::with_capacity(n)),
            DataType::Float32 => Builder::Float32(Float32Builder::with_capacity(n)),
            DataType::Float64 => Builder::Float64(Float64Builder::with_capacity(n)),
            DataType::Decimal => Builder::Decimal(FixedSizeBinaryBuilder::with_capacity(n, 16)),
            DataType::Varchar => Builder::Varchar(StringBuilder::with_capacity(n, n * 8)),
            DataType::Boolean => Builder::Boolean(BooleanBuilder::with_capacity(n)),
            DataType::Date => Builder::Date(Date32Builder::with_capacity(n)),
            DataType::Timestamp => {
                Builder::Timestamp(TimestampMicrosecondBuilder::with_capacity(n))
            }
            DataType::Interval => Builder::Interval(FixedSizeBinaryBuilder::with_capacity(n, 16)),
            DataType::Array(e) => Builder::Array(e, Vec::with_capacity(n)),
            DataType::Jsonb => Builder::Jsonb(Vec::with_capacity(n)),
            DataType::Uuid => Builder::Uuid(FixedSizeBinaryBuilder::with_capacity(n, 16)),
            DataType::Bytea => Builder::Bytea(BinaryBuilder::with_capacity(n, n * 8)),
            DataType::Time => Builder::Time(Time64MicrosecondBuilder::with_capacity(n)),
            DataType::Timestamptz => {
                Builder::Timestamptz(TimestampMicrosecondBuilder::with_capacity(n))
            }
        }
    }
}

impl ColumnBuilder {
    pub fn new(ty: Option<DataType>, capacity: usize) -> ColumnBuilder {
        ColumnBuilder {
            inner: match ty {
                Some(ty) => Builder::typed(ty, capacity),
                None => Builder::Untyped(0),
            },
            capacity,
        }
    }

    pub fn push_null(&mut self) {
        match &mut self.inner {
            Builder::Untyped(n) => *n += 1,
            Builder::Int16(b) => b.append_null(),
            Builder::Int32(b) => b.append_null(),
            Builder::Int64(b) => b.append_null(),
            Builder::Float32(b) => b.append_null(),
            Builder::Float64(b) => b.append_null(),
            Builder::Decimal(b) | Builder::Interval(b) | Builder::Uuid(b) => b.append_null(),
            Builder::Bytea(b) => b.append_null(),
            Builder::Time(b) => b.append_null(),
            Builder::Varchar(b) => b.append_null(),
            Builder::Boolean(b) => b.append_null(),
            Builder::Date(b) => b.append_null(),
            Builder::Timestamp(b) | Builder::Timestamptz(b) => b.append_null(),
            Builder::Array(_, v) => v.push(None),
            Builder::Jsonb(v) => v.push(None),
        }
    }

    pub fn push(&mut self, value: DatumRef<'_>) {
        let Some(v) = value else {
            self.push_null();
            return;
        };
        if let Builder::Untyped(nulls) = self.inner {
            let ty = v.to_owned_type();
            self.inner = Builder::typed(ty, self.capacity.max(nulls + 1));
            for _ in 0..nulls {
                self.push_null();
            }
        }
        match (&mut self.inner, v) {
            (Builder::Int16(b), ScalarRef::Int16(x)) => b.append_value(x),
            (Builder::Int32(b), ScalarRef::Int32(x)) => b.append_value(x),
            (Builder::Int64(b), ScalarRef::Int64(x)) => b.append_value(x),
            (Builder::Float32(b), ScalarRef::Float32(x)) => b.append_value(x.0 as f32),
            (Builder::Float64(b), ScalarRef::Float64(x)) => b.append_value(x.0),
            (Builder::Decimal(b), ScalarRef::Decimal(x)) => {
                // Width 16 is the builder's: appending 16 bytes cannot fail.
                let _ = b.append_value(x.to_bytes());
            }
            (Builder::Varchar(b), ScalarRef::Varchar(x)) => b.append_value(x),
            (Builder::Boolean(b), ScalarRef::Boolean(x)) => b.append_value(x),
            (Builder::Date(b), ScalarRef::Date(x)) => b.append_value(date_to_days(x)),
            (Builder::Timestamp(b), ScalarRef::Timestamp(x)) => {
                b.append_value(x.and_utc().timestamp_micros())
            }
            (Builder::Timestamptz(b), ScalarRef::Timestamptz(x)) => b.append_value(x),
            (Builder::Interval(b), ScalarRef::Interval(x)) => {
                let _ = b.append_value(interval_bytes(&x));
            }
            (Builder::Jsonb(v), ScalarRef::Jsonb(x)) => v.push(Some(Arc::clone(x))),
            (Builder::Bytea(b), ScalarRef::Bytea(x)) => b.append_value(x),
            (Builder::Time(b), ScalarRef::Time(x)) => b.append_value(x),
            (Builder::Uuid(b), ScalarRef::Uuid(x)) => {
                let _ = b.append_value(x.to_be_bytes());
            }
            (Builder::Array(e, v), ScalarRef::Array(x)) if x.elem == *e => {
                v.push(Some(Arc::clone(x)))
            }
            // Integers of a narrower type widen exactly.
            (Builder::Int32(b), ScalarRef::Int16(x)) => b.append_value(x as i32),
            (Builder::Int64(b), ScalarRef::Int16(x)) => b.append_value(x as i64),
            (Builder::Int64(b), ScalarRef::Int32(x)) => b.append_value(x as i64),
            (Builder::Float64(b), ScalarRef::Float32(x)) => b.append_value(x.0),
            (_, v) => {
                // A plan types every column; a value of another type is a
                // bug upstream. It must not take the job down: NULL, logged.
                debug_assert!(false, "value {v:?} in a column of another type");
                tracing::error!(value = ?v, "value of the wrong type for its column; stored as NULL");
                self.push_null();
            }
        }
    }

    pub fn finish(self) -> Column {
        match self.inner {
            Builder::Untyped(n) => Column::Null(n),
            Builder::Int16(mut b) => Column::Int16(b.finish()),
            Builder::Int32(mut b) => Column::Int32(b.finish()),
            Builder::Int64(mut b) => Column::Int64(b.finish()),
            Builder::Float32(mut b) => Column::Float32(b.finish()),
            Builder::Float64(mut b) => Column::Float64(b.finish()),
            Builder::Decimal(mut b) => Column::Decimal(b.finish()),
            Builder::Varchar(mut b) => Column::Varchar(b.finish()),
            Builder::Boolean(mut b) => Column::Boolean(b.finish()),
            Builder::Date(mut b) => Column::Date(b.finish()),
            Builder::Timestamp(mut b) => Column::Timestamp(b.finish()),
            Builder::Timestamptz(mut b) => Column::Timestamptz(b.finish()),
            Builder::Interval(mut b) => Column::Interval(b.finish()),
            Builder::Jsonb(v) => Column::Jsonb(v.into()),
            Builder::Uuid(mut b) => Column::Uuid(b.finish()),
            Builder::Bytea(mut b) => Column::Bytea(b.finish()),
            Builder::Time(mut b) => Column::Time(b.finish()),
            Builder::Array(elem, v) => Column::Array(ArrayColumn {
                elem,
                values: v.into(),
            }),
        }
    }
}

impl ScalarRef<'_> {
    pub fn to_owned_type(self) -> DataType {
        match self {
            ScalarRef::Int16(_) => DataType::Int16,
            ScalarRef::Int32(_) => DataType::Int32,
            ScalarRef::Int64(_) => DataType::Int64,
            ScalarRef::Float32(_) => DataType::Float32,
            ScalarRef::Float64(_) => DataType::Float64,
            ScalarRef::Decimal(_) => DataType::Decimal,
            ScalarRef::Varchar(_) => DataType::Varchar,
            ScalarRef::Boolean(_) => DataType::Boolean,
            ScalarRef::Date(_) => DataType::Date,
            ScalarRef::Timestamp(_) => DataType::Timestamp,
            ScalarRef::Interval(_) => DataType::Interval,
            ScalarRef::Array(a) => DataType::Array(a.elem),
            ScalarRef::Timestamptz(_) => DataType::Timestamptz,
            ScalarRef::Jsonb(_) => DataType::Jsonb,
            ScalarRef::Uuid(_) => DataType::Uuid,
            ScalarRef::Bytea(_) => DataType::Bytea,
            ScalarRef::Time(_) => DataType::Time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_through_a_column() {
        let values = [
            ScalarValue::Int16(-3),
            ScalarValue::Int32(i32::MIN),
            ScalarValue::Int64(i64::MAX),
            ScalarValue::Float32(F64(1.5)),
            ScalarValue::Float64(F64(f64::NAN)),
            ScalarValue::decimal(rust_decimal::Decimal::new(-12345, 3)),
            ScalarValue::Decimal(Numeric::PosInf),
            ScalarValue::varchar("héllo"),
            ScalarValue::Boolean(true),
            ScalarValue::Date(NaiveDate::from_ymd_opt(-4000, 2, 29).unwrap_or_default()),
            ScalarValue::Timestamp(
                NaiveDate::from_ymd_opt(2024, 1, 2)
                    .and_then(|d| d.and_hms_micro_opt(3, 4, 5, 678_901))
                    .unwrap_or_default(),
            ),
            ScalarValue::Timestamptz(-1_234_567_890_123),
            ScalarValue::Uuid(0xa0ee_bc99_9c0b_4ef8_bb6d_6bb9_bd38_0a11),
            ScalarValue::Bytea(Arc::from(&b"\x00\xffab"[..])),
            ScalarValue::Time(86_400_000_000),
            ScalarValue::Jsonb(Arc::new(
                Jsonb::parse(r#"{"a": [1.50, null, "x"], "b": {}}"#).unwrap_or(Jsonb::Null),
            )),
            ScalarValue::Interval(Interval {
                months: -1,
                days: 40,
                micros: i64::MIN + 1,
            }),
            ScalarValue::array(
                ElemType::Varchar,
                vec![Some(ScalarValue::varchar("a")), None],
            ),
        ];
        for v in values {
            let mut b = ColumnBuilder::new(None, 0);
            b.push(None);
            b.push(Some(v.as_scalar_ref()));
            let c = b.finish();
            assert_eq!(c.data_type(), Some(v.data_type()));
            assert_eq!(c.datum(0), None);
            assert_eq!(c.datum(1), Some(v.clone()));
            let mask = BooleanArray::from(vec![false, true]);
            assert_eq!(c.filter(&mask).datum(0), Some(v));
        }
        let nulls = ColumnBuilder::new(None, 0);
        assert_eq!(nulls.finish().len(), 0);
    }
}
