//! SQL type names and literal values.

use ebbflow_common::ErrorKind;
use rust_decimal::Decimal;
use sqlparser::ast::{self, ExactNumberInfo, TimezoneInfo};

use crate::{SqlError, SqlResult};
use ebbflow_common::text::parse_datum_in;
use ebbflow_common::{DataType, ScalarValue};
use ebbflow_expr::Expr;

/// Map a type name as written to one of our types; anything else is
/// feature_not_supported naming the type.
pub fn data_type_from_ast(dt: &ast::DataType) -> SqlResult<DataType> {
    use ast::DataType as T;
    let unsupported = || SqlError::unsupported(format!("type {dt}"));
    Ok(match dt {
        T::SmallInt(_) | T::Int2(_) => DataType::Int16,
        T::Int(_) | T::Integer(_) | T::Int4(_) => DataType::Int32,
        T::BigInt(_) | T::Int8(_) => DataType::Int64,
        T::Real | T::Float4 => DataType::Float32,
        T::Double(_) | T::DoublePrecision | T::Float8 => DataType::Float64,
        T::Float(info) => match info {
            ExactNumberInfo::Precision(p) | ExactNumberInfo::PrecisionAndScale(p, _)
                if *p <= 24 =>
            {
                DataType::Float32
            }
            _ => DataType::Float64,
        },
        T::Numeric(_) | T::Decimal(_) | T::Dec(_) => DataType::Decimal,
        T::Varchar(_) | T::Text | T::CharacterVarying(_) | T::CharVarying(_) | T::String(_) => {
            DataType::Varchar
        }
        T::Bool | T::Boolean => DataType::Boolean,
        T::Date => DataType::Date,
        T::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => DataType::Timestamp,
        T::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => DataType::Timestamptz,
        T::Interval { .. } => DataType::Interval,
        // `json` is stored as jsonb, as RisingWave does.
        T::JSON | T::JSONB => DataType::Jsonb,
        T::Uuid => DataType::Uuid,
        T::Bytea => DataType::Bytea,
        T::Time(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => DataType::Time,
        // `int[]`, `int[3]`, `integer ARRAY`: sizes are ignored, as in
        // PostgreSQL; `int[][]` is `int[]` too.
        T::Array(
            ast::ArrayElemTypeDef::SquareBracket(inner, _)
            | ast::ArrayElemTypeDef::Qualified(inner, _)
            | ast::ArrayElemTypeDef::AngleBracket(inner),
        ) => data_type_from_ast(inner)?.array_of(),
        T::Custom(name, modifiers) if modifiers.is_empty() || name.0.len() == 1 => {
            let n = crate::parser::object_name_to_string(name);
            match n.trim_start_matches("pg_catalog.") {
                "int2" => DataType::Int16,
                "int4" => DataType::Int32,
                "int8" => DataType::Int64,
                "float4" => DataType::Float32,
                "float8" => DataType::Float64,
                "numeric" | "decimal" => DataType::Decimal,
                "varchar" | "text" | "string" => DataType::Varchar,
                "bool" | "boolean" => DataType::Boolean,
                "date" => DataType::Date,
                "timestamp" => DataType::Timestamp,
                "timestamptz" => DataType::Timestamptz,
                "json" | "jsonb" => DataType::Jsonb,
                "uuid" => DataType::Uuid,
                "bytea" => DataType::Bytea,
                "time" => DataType::Time,
                "interval" => DataType::Interval,
                _ => return Err(unsupported()),
            }
        }
        _ => return Err(unsupported()),
    })
}

/// PostgreSQL's internal type name, used as the output name of a cast of
/// a constant (`SELECT 1::bigint` is column `int8`).
pub fn internal_type_name(ty: DataType) -> &'static str {
    match ty {
        DataType::Int16 => "int2",
        DataType::Int32 => "int4",
        DataType::Int64 => "int8",
        DataType::Float32 => "float4",
        DataType::Float64 => "float8",
        DataType::Decimal => "numeric",
        DataType::Varchar => "varchar",
        DataType::Boolean => "bool",
        DataType::Date => "date",
        DataType::Timestamp => "timestamp",
        DataType::Interval => "interval",
        DataType::Timestamptz => "timestamptz",
        DataType::Jsonb => "jsonb",
        DataType::Uuid => "uuid",
        DataType::Bytea => "bytea",
        DataType::Time => "time",
        // `'{1}'::int[]` is named after its element type, as in PostgreSQL.
        DataType::Array(e) => internal_type_name(e.data_type()),
    }
}

/// A numeric literal as PostgreSQL types it: `int4` if it fits, else
/// `int8`, else `numeric`; anything with a point or exponent is `numeric`.
pub fn number_literal(text: &str) -> SqlResult<Expr> {
    let is_integer = text
        .bytes()
        .enumerate()
        .all(|(i, b)| b.is_ascii_digit() || (i == 0 && (b == b'-' || b == b'+')));
    if is_integer {
        if let Ok(v) = text.parse::<i32>() {
            return Ok(Expr::literal(Some(ScalarValue::Int32(v)), DataType::Int32));
        }
        if let Ok(v) = text.parse::<i64>() {
            return Ok(Expr::literal(Some(ScalarValue::Int64(v)), DataType::Int64));
        }
    }
    let parsed = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text).ok()
    } else {
        text.parse::<Decimal>().ok()
    };
    match parsed {
        Some(d) => Ok(Expr::literal(
            Some(ScalarValue::decimal(d)),
            DataType::Decimal,
        )),
        None => Err(SqlError::new(
            ErrorKind::NumericValueOutOfRange,
            format!("numeric literal {text} is out of range"),
        )),
    }
}

/// Parse the text of an unknown-typed literal as `ty` (PostgreSQL's input
/// function for the type).
pub fn text_literal(text: &str, ty: DataType) -> SqlResult<Expr> {
    let zone = ebbflow_expr::zoned::session_zone().0;
    let v = parse_datum_in(ty, text, &zone).map_err(|e| SqlError::new(e.kind, e.message))?;
    Ok(Expr::literal(Some(v), ty))
}
