//! SQL data types and scalar values.
//!
//! A [`Datum`] is `Option<ScalarValue>`: `None` is SQL NULL. Values carry a
//! total order and a hash that agree with PostgreSQL equality (`-0.0 = 0.0`,
//! `NaN = NaN` and greater than every number, `'1 month' = '30 days'`), so
//! they can be group keys, join keys and state-table keys directly.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;

/// The SQL types of docs/design.md §2.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum DataType {
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Decimal,
    Varchar,
    Boolean,
    Date,
    Timestamp,
    Interval,
    /// A one-dimensional PostgreSQL array (`integer[]`). PostgreSQL has no
    /// arrays of arrays as a type of their own (`int[][]` is `int[]`), so
    /// the element is always a scalar type and `DataType` stays `Copy`.
    Array(ElemType),
    /// `timestamp with time zone`: an instant, kept as microseconds since
    /// 1970-01-01 00:00 UTC and shown in the session's time zone.
    Timestamptz,
    /// `jsonb` (`json` input is read as jsonb, as RisingWave does).
    Jsonb,
    Uuid,
    Bytea,
    /// `time without time zone`: microseconds since midnight, `24:00:00`
    /// included.
    Time,
}

/// The element type of an array: one of the scalar [`DataType`]s.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ElemType {
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Decimal,
    Varchar,
    Boolean,
    Date,
    Timestamp,
    Interval,
    Timestamptz,
    Jsonb,
    Uuid,
    Bytea,
    Time,
}

impl ElemType {
    /// Every element type, in declaration order (the order of type tags).
    pub const ALL: [ElemType; 16] = [
        ElemType::Int16,
        ElemType::Int32,
        ElemType::Int64,
        ElemType::Float32,
        ElemType::Float64,
        ElemType::Decimal,
        ElemType::Varchar,
        ElemType::Boolean,
        ElemType::Date,
        ElemType::Timestamp,
        ElemType::Interval,
        ElemType::Timestamptz,
        ElemType::Jsonb,
        ElemType::Uuid,
        ElemType::Bytea,
        ElemType::Time,
    ];

    /// The scalar type of the elements.
    pub fn data_type(self) -> DataType {
        match self {
            ElemType::Int16 => DataType::Int16,
            ElemType::Int32 => DataType::Int32,
            ElemType::Int64 => DataType::Int64,
            ElemType::Float32 => DataType::Float32,
            ElemType::Float64 => DataType::Float64,
            ElemType::Decimal => DataType::Decimal,
            ElemType::Varchar => DataType::Varchar,
            ElemType::Boolean => DataType::Boolean,
            ElemType::Date => DataType::Date,
            ElemType::Timestamp => DataType::Timestamp,
            ElemType::Interval => DataType::Interval,
            ElemType::Timestamptz => DataType::Timestamptz,
            ElemType::Jsonb => DataType::Jsonb,
            ElemType::Uuid => DataType::Uuid,
            ElemType::Bytea => DataType::Bytea,
            ElemType::Time => DataType::Time,
        }
    }

    /// The element type of `ty`'s arrays; `None` for an array type (an
    /// array of arrays is the same array type, see [`DataType::array_of`]).
    pub fn of(ty: DataType) -> Option<ElemType> {
        Some(match ty {
            DataType::Int16 => ElemType::Int16,
            DataType::Int32 => ElemType::Int32,
            DataType::Int64 => ElemType::Int64,
            DataType::Float32 => ElemType::Float32,
            DataType::Float64 => ElemType::Float64,
            DataType::Decimal => ElemType::Decimal,
            DataType::Varchar => ElemType::Varchar,
            DataType::Boolean => ElemType::Boolean,
            DataType::Date => ElemType::Date,
            DataType::Timestamp => ElemType::Timestamp,
            DataType::Interval => ElemType::Interval,
            DataType::Timestamptz => ElemType::Timestamptz,
            DataType::Jsonb => ElemType::Jsonb,
            DataType::Uuid => ElemType::Uuid,
            DataType::Bytea => ElemType::Bytea,
            DataType::Time => ElemType::Time,
            DataType::Array(_) => return None,
        })
    }
}

impl DataType {
    /// The array type over `self`: `int` gives `int[]`, and (as in
    /// PostgreSQL, where `int[][]` is `int[]`) an array type gives itself.
    pub fn array_of(self) -> DataType {
        match self {
            DataType::Array(e) => DataType::Array(e),
            scalar => DataType::Array(ElemType::of(scalar).unwrap_or(ElemType::Varchar)),
        }
    }

    /// The element type, for an array type.
    pub fn elem(self) -> Option<DataType> {
        match self {
            DataType::Array(e) => Some(e.data_type()),
            _ => None,
        }
    }

    pub fn is_array(self) -> bool {
        matches!(self, DataType::Array(_))
    }

    /// The PostgreSQL name, as `format_type` prints it.
    pub fn pg_name(self) -> &'static str {
        match self {
            DataType::Array(e) => match e {
                ElemType::Int16 => "smallint[]",
                ElemType::Int32 => "integer[]",
                ElemType::Int64 => "bigint[]",
                ElemType::Float32 => "real[]",
                ElemType::Float64 => "double precision[]",
                ElemType::Decimal => "numeric[]",
                ElemType::Varchar => "character varying[]",
                ElemType::Boolean => "boolean[]",
                ElemType::Date => "date[]",
                ElemType::Timestamp => "timestamp without time zone[]",
                ElemType::Interval => "interval[]",
                ElemType::Timestamptz => "timestamp with time zone[]",
                ElemType::Jsonb => "jsonb[]",
                ElemType::Uuid => "uuid[]",
                ElemType::Bytea => "bytea[]",
                ElemType::Time => "time without time zone[]",
            },
            DataType::Int16 => "smallint",
            DataType::Int32 => "integer",
            DataType::Int64 => "bigint",
            DataType::Float32 => "real",
            DataType::Float64 => "double precision",
            DataType::Decimal => "numeric",
            DataType::Varchar => "character varying",
            DataType::Boolean => "boolean",
            DataType::Date => "date",
            DataType::Timestamp => "timestamp without time zone",
            DataType::Interval => "interval",
            DataType::Timestamptz => "timestamp with time zone",
            DataType::Jsonb => "jsonb",
            DataType::Uuid => "uuid",
            DataType::Bytea => "bytea",
            DataType::Time => "time without time zone",
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(self, DataType::Int16 | DataType::Int32 | DataType::Int64)
    }

    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::Float32
                | DataType::Float64
                | DataType::Decimal
        )
    }

    /// PostgreSQL type OID (built-in OIDs only, see NOTES.md).
    pub fn oid(self) -> u32 {
        match self {
            DataType::Int16 => 21,
            DataType::Int32 => 23,
            DataType::Int64 => 20,
            DataType::Float32 => 700,
            DataType::Float64 => 701,
            DataType::Decimal => 1700,
            DataType::Varchar => 1043,
            DataType::Boolean => 16,
            DataType::Date => 1082,
            DataType::Timestamp => 1114,
            DataType::Interval => 1186,
            DataType::Timestamptz => 1184,
            DataType::Jsonb => 3802,
            DataType::Uuid => 2950,
            DataType::Bytea => 17,
            DataType::Time => 1083,
            DataType::Array(e) => match e {
                ElemType::Int16 => 1005,
                ElemType::Int32 => 1007,
                ElemType::Int64 => 1016,
                ElemType::Float32 => 1021,
                ElemType::Float64 => 1022,
                ElemType::Decimal => 1231,
                ElemType::Varchar => 1015,
                ElemType::Boolean => 1000,
                ElemType::Date => 1182,
                ElemType::Timestamp => 1115,
                ElemType::Interval => 1187,
                ElemType::Timestamptz => 1185,
                ElemType::Jsonb => 3807,
                ElemType::Uuid => 2951,
                ElemType::Bytea => 1001,
                ElemType::Time => 1183,
            },
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.pg_name())
    }
}

/// A float with PostgreSQL's total order: NaN equals NaN and sorts above
/// every other value; `-0.0` equals `0.0`.
#[derive(Clone, Copy, Debug, Default)]
pub struct F64(pub f64);

// As raw bits, so NaN and infinities survive any serde format.
impl serde::Serialize for F64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0.to_bits())
    }
}

impl<'de> serde::Deserialize<'de> for F64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bits = <u64 as serde::Deserialize>::deserialize(d)?;
        Ok(F64(f64::from_bits(bits)))
    }
}

impl F64 {
    fn canonical_bits(self) -> u64 {
        if self.0.is_nan() {
            f64::NAN.to_bits()
        } else if self.0 == 0.0 {
            0
        } else {
            self.0.to_bits()
        }
    }
}

impl PartialEq for F64 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for F64 {}
impl PartialOrd for F64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for F64 {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.0.is_nan(), other.0.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal),
        }
    }
}
impl Hash for F64 {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.canonical_bits().hash(state)
    }
}

/// A PostgreSQL interval: months, days and microseconds kept apart, compared
/// (like PostgreSQL) on the total with 30-day months and 24-hour days.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    pub const MICROS_PER_DAY: i64 = 86_400_000_000;

    pub fn new(months: i32, days: i32, micros: i64) -> Self {
        Interval {
            months,
            days,
            micros,
        }
    }

    /// The total in microseconds used for comparison and hashing.
    pub fn total_micros(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * Self::MICROS_PER_DAY as i128
            + self.micros as i128
    }

    /// The representative of the intervals equal to this one (same
    /// total): as many whole 30-day months as the total holds, then whole
    /// days, then microseconds, all of the total's sign (`'24 hours'` is
    /// `'1 day'`, `'-1 day +2 hours'` is `'-22:00:00'`). A part that
    /// would not fit its width keeps the excess in the next part; an
    /// interval with no such form (none PostgreSQL can hold) is its own.
    pub fn canonical(&self) -> Interval {
        let day = Self::MICROS_PER_DAY as i128;
        let clamp = |x: i128| x.clamp(i32::MIN as i128, i32::MAX as i128);
        let total = self.total_micros();
        let months = clamp(total / (30 * day));
        let rest = total - months * 30 * day;
        let days = clamp(rest / day);
        match i64::try_from(rest - days * day) {
            Ok(micros) => Interval::new(months as i32, days as i32, micros),
            Err(_) => *self,
        }
    }
}

impl PartialEq for Interval {
    fn eq(&self, other: &Self) -> bool {
        self.total_micros() == other.total_micros()
    }
}
impl Eq for Interval {}
impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Interval {
    fn cmp(&self, other: &Self) -> Ordering {
        self.total_micros().cmp(&other.total_micros())
    }
}
impl Hash for Interval {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.total_micros().hash(state)
    }
}

/// A PostgreSQL `numeric`: a decimal, or one of the special values
/// `'-Infinity'`, `'Infinity'` and `'NaN'`. The variant order is
/// PostgreSQL's: `-Infinity` below every number, `Infinity` above, and
/// `NaN` above everything and equal to itself.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Numeric {
    NegInf,
    Finite(Decimal),
    PosInf,
    NaN,
}

impl From<Decimal> for Numeric {
    fn from(d: Decimal) -> Self {
        Numeric::Finite(d)
    }
}

impl Numeric {
    /// The decimal, if the value is a number.
    pub fn finite(self) -> Option<Decimal> {
        match self {
            Numeric::Finite(d) => Some(d),
            _ => None,
        }
    }

    /// `+1`, `-1` or `0`, as PostgreSQL's `numeric_sign_internal` (NaN is
    /// never asked).
    pub fn signum(self) -> i32 {
        match self {
            Numeric::NegInf => -1,
            Numeric::PosInf => 1,
            Numeric::NaN => 0,
            Numeric::Finite(d) if d.is_zero() => 0,
            Numeric::Finite(d) if d.is_sign_negative() => -1,
            Numeric::Finite(_) => 1,
        }
    }

    /// The infinity of this sign (`sign` > 0: `Infinity`).
    pub fn inf(sign: i32) -> Numeric {
        if sign < 0 {
            Numeric::NegInf
        } else {
            Numeric::PosInf
        }
    }

    /// 16 bytes: rust_decimal's own serialization for a number; for the
    /// special values a first byte (the low byte of its flags, always zero
    /// for a decimal) of 1 (NaN), 2 (Infinity) or 3 (-Infinity).
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        match self {
            Numeric::Finite(d) => return d.serialize(),
            Numeric::NaN => b[0] = 1,
            Numeric::PosInf => b[0] = 2,
            Numeric::NegInf => b[0] = 3,
        }
        b
    }

    /// The inverse of [`Numeric::to_bytes`].
    pub fn from_bytes(b: [u8; 16]) -> Numeric {
        match b[0] {
            0 => Numeric::Finite(Decimal::deserialize(b)),
            1 => Numeric::NaN,
            2 => Numeric::PosInf,
            _ => Numeric::NegInf,
        }
    }
}

/// A non-null SQL value.
///
/// Ordering between values of different variants is by variant only and is
/// never relied upon: the binder casts both sides of a comparison, a join key
/// or a union to one type first.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ScalarValue {
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Float32(F64),
    Float64(F64),
    Decimal(Numeric),
    Varchar(Arc<str>),
    Boolean(bool),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
    Interval(Interval),
    /// Kept behind an `Arc` so a value stays as small as the other
    /// variants and a copy copies no elements.
    Array(Arc<ArrayValue>),
    /// Microseconds since 1970-01-01 00:00 UTC.
    Timestamptz(i64),
    /// Behind an `Arc`, as arrays are.
    Jsonb(Arc<crate::jsonb::Jsonb>),
    /// The 16 bytes, big-endian (their order is PostgreSQL's).
    Uuid(u128),
    Bytea(Arc<[u8]>),
    /// Microseconds since midnight (`0..=86_400_000_000`).
    Time(i64),
}

/// A one-dimensional array value: its element type (an empty array has
/// one too) and its elements, each possibly NULL. Lower bound 1 always.
///
/// Equality, order and hash are PostgreSQL's `array_cmp`: element by
/// element, a NULL element equal to another NULL and greater than any
/// value, and a proper prefix before the longer array. The element type
/// takes no part (arrays of different types are never compared).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ArrayValue {
    pub elem: ElemType,
    pub items: Vec<Datum>,
}

impl ArrayValue {
    pub fn new(elem: ElemType, items: Vec<Datum>) -> ArrayValue {
        ArrayValue { elem, items }
    }
}

impl PartialEq for ArrayValue {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}
impl Eq for ArrayValue {}
impl PartialOrd for ArrayValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ArrayValue {
    fn cmp(&self, other: &Self) -> Ordering {
        for (a, b) in self.items.iter().zip(&other.items) {
            match cmp_datum_nulls_last(a, b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        self.items.len().cmp(&other.items.len())
    }
}
impl Hash for ArrayValue {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.items.hash(state)
    }
}

/// A nullable SQL value; `None` is NULL.
pub type Datum = Option<ScalarValue>;

/// A row of datums, positionally matching some schema.
pub type Row = Vec<Datum>;

impl ScalarValue {
    pub fn data_type(&self) -> DataType {
        match self {
            ScalarValue::Int16(_) => DataType::Int16,
            ScalarValue::Int32(_) => DataType::Int32,
            ScalarValue::Int64(_) => DataType::Int64,
            ScalarValue::Float32(_) => DataType::Float32,
            ScalarValue::Float64(_) => DataType::Float64,
            ScalarValue::Decimal(_) => DataType::Decimal,
            ScalarValue::Varchar(_) => DataType::Varchar,
            ScalarValue::Boolean(_) => DataType::Boolean,
            ScalarValue::Date(_) => DataType::Date,
            ScalarValue::Timestamp(_) => DataType::Timestamp,
            ScalarValue::Interval(_) => DataType::Interval,
            ScalarValue::Array(a) => DataType::Array(a.elem),
            ScalarValue::Timestamptz(_) => DataType::Timestamptz,
            ScalarValue::Jsonb(_) => DataType::Jsonb,
            ScalarValue::Uuid(_) => DataType::Uuid,
            ScalarValue::Bytea(_) => DataType::Bytea,
            ScalarValue::Time(_) => DataType::Time,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ScalarValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as an i64 if it is an integer of any width.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            ScalarValue::Int16(v) => Some(*v as i64),
            ScalarValue::Int32(v) => Some(*v as i64),
            ScalarValue::Int64(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            ScalarValue::Varchar(s) => Some(s),
            _ => None,
        }
    }

    pub fn varchar(s: impl Into<Arc<str>>) -> ScalarValue {
        ScalarValue::Varchar(s.into())
    }

    /// A finite numeric.
    pub fn decimal(d: Decimal) -> ScalarValue {
        ScalarValue::Decimal(Numeric::Finite(d))
    }

    pub fn float64(v: f64) -> ScalarValue {
        ScalarValue::Float64(F64(v))
    }

    pub fn float32(v: f32) -> ScalarValue {
        ScalarValue::Float32(F64(v as f64))
    }

    pub fn array(elem: ElemType, items: Vec<Datum>) -> ScalarValue {
        ScalarValue::Array(Arc::new(ArrayValue::new(elem, items)))
    }

    /// The empty array of an array type (of text for any other type).
    pub fn array_empty(ty: DataType) -> ScalarValue {
        let elem = match ty {
            DataType::Array(e) => e,
            _ => ElemType::Varchar,
        };
        ScalarValue::array(elem, Vec::new())
    }

    pub fn as_array(&self) -> Option<&ArrayValue> {
        match self {
            ScalarValue::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// A named, typed column of a schema.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Field {
    pub name: String,
    pub data_type: DataType,
}

impl Field {
    pub fn new(name: impl Into<String>, data_type: DataType) -> Self {
        Field {
            name: name.into(),
            data_type,
        }
    }
}

/// Compare two datums with PostgreSQL's default NULL placement for ascending
/// order (NULLs last).
pub fn cmp_datum_nulls_last(a: &Datum, b: &Datum) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y),
    }
}

/// Whether two rows are the same as written, not only equal: `1.0` and
/// `1.00` are equal but not identical. An executor that skips a change
/// when a row "did not change" asks this, so a new representation of an
/// equal value (a sum that went from `3.0` to `3.00`) still reaches the
/// result, as PostgreSQL would print it.
pub fn identical(a: &[Datum], b: &[Datum]) -> bool {
    a == b
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => same_representation(x, y),
            _ => true,
        })
}

/// For two equal values: whether they are also written alike.
fn same_representation(a: &ScalarValue, b: &ScalarValue) -> bool {
    match (a, b) {
        (ScalarValue::Decimal(Numeric::Finite(x)), ScalarValue::Decimal(Numeric::Finite(y))) => {
            x.serialize() == y.serialize()
        }
        (ScalarValue::Interval(x), ScalarValue::Interval(y)) => {
            (x.months, x.days, x.micros) == (y.months, y.days, y.micros)
        }
        (ScalarValue::Float32(x), ScalarValue::Float32(y))
        | (ScalarValue::Float64(x), ScalarValue::Float64(y)) => {
            x.0.is_nan() || x.0.is_sign_negative() == y.0.is_sign_negative()
        }
        (ScalarValue::Array(x), ScalarValue::Array(y)) => identical(&x.items, &y.items),
        // `1.0` and `1` inside are equal but not written alike.
        (ScalarValue::Jsonb(x), ScalarValue::Jsonb(y)) => x.written_alike(y),
        _ => true,
    }
}
