//! Expected strings were produced by PostgreSQL 15 (psql).

use super::*;
use crate::{Interval, F64};

fn fmt(ty: DataType, s: &str) -> String {
    match parse_datum(ty, s) {
        Ok(v) => format_datum(&v),
        Err(e) => format!("ERR {} {}", e.kind, e.message),
    }
}

#[test]
fn float8_output() {
    let cases = [
        ("1.5", "1.5"),
        ("0.1", "0.1"),
        ("1e20", "1e+20"),
        ("1.2345678901234567e-05", "1.2345678901234568e-05"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("NaN", "NaN"),
        ("1e14", "100000000000000"),
        ("1e15", "1e+15"),
        ("123456789012345", "123456789012345"),
        ("1234567890123456", "1.234567890123456e+15"),
        ("0.0001", "0.0001"),
        ("0.00001", "1e-05"),
        ("0.00012345", "0.00012345"),
        ("-0", "-0"),
        ("1e-300", "1e-300"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("5e-324", "5e-324"),
        (" 1e3 ", "1000"),
        ("inf", "Infinity"),
        ("-INFINITY", "-Infinity"),
        ("nan", "NaN"),
        (".5", "0.5"),
        ("5.", "5"),
    ];
    for (input, want) in cases {
        assert_eq!(fmt(DataType::Float64, input), want, "{}", input);
    }
    assert_eq!(format_float(0.1 + 0.2, false), "0.30000000000000004");
    // The shortest candidate lies exactly halfway to the neighbour: PG
    // prints the next longer one.
    assert_eq!(
        fmt(DataType::Float64, "-2.245103439701539e+16"),
        "-2.2451034397015392e+16"
    );
    assert_eq!(
        fmt(DataType::Float64, "-3.734776531836002e+16"),
        "-3.7347765318360016e+16"
    );
    assert_eq!(
        fmt(DataType::Float64, "9007199254740993"),
        "9.007199254740992e+15"
    );
    assert_eq!(fmt(DataType::Float64, "1e23"), "9.999999999999999e+22");
    assert_eq!(format_float(-2.5, false), "-2.5");
}

#[test]
fn float4_output() {
    let cases = [
        ("1e5", "100000"),
        ("1e6", "1e+06"),
        ("123456", "123456"),
        ("1234567", "1.234567e+06"),
        ("0.0001", "0.0001"),
        ("0.00001", "1e-05"),
        ("1.1", "1.1"),
        ("3.4028235e38", "3.4028235e+38"),
        ("100000.5", "100000.5"),
        ("5.010503e+07", "5.0105032e+07"),
        ("443248384", "4.4324838e+08"),
    ];
    for (input, want) in cases {
        assert_eq!(fmt(DataType::Float32, input), want, "{}", input);
    }
    let s = (0.1f32 + 0.2f32) as f64;
    assert_eq!(format_datum(&ScalarValue::Float32(F64(s))), "0.3");
}

#[test]
fn float_input_errors() {
    assert_eq!(
        fmt(DataType::Float64, "x"),
        "ERR invalid_text_representation invalid input syntax for type double precision: \"x\""
    );
    assert_eq!(
        fmt(DataType::Float64, "1e400"),
        "ERR numeric_value_out_of_range \"1e400\" is out of range for type double precision"
    );
    assert_eq!(
        fmt(DataType::Float64, "1e-400"),
        "ERR numeric_value_out_of_range \"1e-400\" is out of range for type double precision"
    );
    assert!(fmt(DataType::Float32, "1e39").starts_with("ERR numeric_value_out_of_range"));
    assert!(fmt(DataType::Float64, "1e").starts_with("ERR invalid_text_representation"));
    assert!(fmt(DataType::Float64, "").starts_with("ERR invalid_text_representation"));
}

#[test]
fn integers() {
    assert_eq!(fmt(DataType::Int32, " 12 "), "12");
    assert_eq!(fmt(DataType::Int16, "+5"), "5");
    assert_eq!(fmt(DataType::Int64, "-0"), "0");
    assert_eq!(
        fmt(DataType::Int32, "abc"),
        "ERR invalid_text_representation invalid input syntax for type integer: \"abc\""
    );
    assert_eq!(
        fmt(DataType::Int32, "99999999999"),
        "ERR numeric_value_out_of_range value \"99999999999\" is out of range for type integer"
    );
    assert_eq!(
        fmt(DataType::Int32, "1e3"),
        "ERR invalid_text_representation invalid input syntax for type integer: \"1e3\""
    );
    assert_eq!(
        fmt(DataType::Int32, "1.5"),
        "ERR invalid_text_representation invalid input syntax for type integer: \"1.5\""
    );
    assert!(fmt(DataType::Int16, "32768").starts_with("ERR numeric_value_out_of_range"));
    assert_eq!(fmt(DataType::Int16, "-32768"), "-32768");
    assert!(fmt(DataType::Int32, "- 1").starts_with("ERR invalid_text_representation"));
}

#[test]
fn numerics() {
    let cases = [
        ("1.50", "1.50"),
        (" 1.5e3 ", "1500"),
        ("1.50e1", "15.0"),
        ("-0.00", "0.00"),
        (".5", "0.5"),
        ("1.5e-3", "0.0015"),
        ("  -12  ", "-12"),
        ("000123.4500", "123.4500"),
        ("12345678901234567890", "12345678901234567890"),
    ];
    for (input, want) in cases {
        assert_eq!(fmt(DataType::Decimal, input), want, "{}", input);
    }
    assert_eq!(
        fmt(DataType::Decimal, "x"),
        "ERR invalid_text_representation invalid input syntax for type numeric: \"x\""
    );
    for (input, want) in [
        ("NaN", "NaN"),
        (" nan ", "NaN"),
        ("Infinity", "Infinity"),
        ("+inf", "Infinity"),
        ("-INFINITY", "-Infinity"),
        ("-inf", "-Infinity"),
    ] {
        assert_eq!(fmt(DataType::Decimal, input), want, "{input}");
    }
    assert!(fmt(DataType::Decimal, "-NaN").starts_with("ERR invalid_text_representation"));
    assert!(fmt(DataType::Decimal, "infinit").starts_with("ERR invalid_text_representation"));
    assert!(fmt(DataType::Decimal, "1e100").starts_with("ERR numeric_value_out_of_range"));
    // More fractional digits than rust_decimal keeps: rounded.
    assert_eq!(
        fmt(DataType::Decimal, "0.12345678901234567890123456789"),
        "0.1234567890123456789012345679"
    );
}

#[test]
fn booleans() {
    for s in ["t", "true", "TRUE", "yes", "y", "on", "1", " 1 ", "tr"] {
        assert_eq!(fmt(DataType::Boolean, s), "t", "{}", s);
    }
    for s in ["f", "false", "no", "n", "off", "of", "0"] {
        assert_eq!(fmt(DataType::Boolean, s), "f", "{}", s);
    }
    assert_eq!(
        fmt(DataType::Boolean, "o"),
        "ERR invalid_text_representation invalid input syntax for type boolean: \"o\""
    );
    assert!(fmt(DataType::Boolean, "truex").starts_with("ERR"));
}

#[test]
fn dates_and_timestamps() {
    assert_eq!(fmt(DataType::Date, "2024-01-02"), "2024-01-02");
    assert_eq!(fmt(DataType::Date, "2024-01-02 03:04:05"), "2024-01-02");
    assert_eq!(fmt(DataType::Date, "20240102"), "2024-01-02");
    assert_eq!(fmt(DataType::Date, "2024-1-2"), "2024-01-02");
    assert_eq!(fmt(DataType::Date, "0044-03-15 BC"), "0044-03-15 BC");
    assert_eq!(
        fmt(DataType::Date, "2024-13-01"),
        "ERR datetime_field_overflow date/time field value out of range: \"2024-13-01\""
    );
    assert_eq!(
        fmt(DataType::Date, "2024-02-30"),
        "ERR datetime_field_overflow date/time field value out of range: \"2024-02-30\""
    );
    assert_eq!(
        fmt(DataType::Date, "xyz"),
        "ERR invalid_datetime_format invalid input syntax for type date: \"xyz\""
    );
    let ts = [
        ("2024-01-02 03:04:05", "2024-01-02 03:04:05"),
        ("2024-01-02 03:04:05.123", "2024-01-02 03:04:05.123"),
        ("2024-01-02T03:04:05.1234567", "2024-01-02 03:04:05.123457"),
        ("2024-01-02 24:00:00", "2024-01-03 00:00:00"),
        ("2024-01-02 03:04", "2024-01-02 03:04:00"),
        ("2024-01-02", "2024-01-02 00:00:00"),
        ("2024-01-02 03:04:05+02", "2024-01-02 03:04:05"),
        ("2024-01-02T03:04:05Z", "2024-01-02 03:04:05"),
        ("2024-01-02 03:04:05.000001", "2024-01-02 03:04:05.000001"),
    ];
    for (input, want) in ts {
        assert_eq!(fmt(DataType::Timestamp, input), want, "{}", input);
    }
    assert_eq!(
        fmt(DataType::Timestamp, "2024-01-02 25:00:00"),
        "ERR datetime_field_overflow date/time field value out of range: \"2024-01-02 25:00:00\""
    );
    assert_eq!(
        fmt(DataType::Timestamp, "x"),
        "ERR invalid_datetime_format invalid input syntax for type timestamp: \"x\""
    );
    assert!(fmt(DataType::Timestamp, "2024-01-02 é").starts_with("ERR"));
}

#[test]
fn interval_output() {
    let cases = [
        (
            "1 year 2 mons 3 days 04:05:06.5",
            "1 year 2 mons 3 days 04:05:06.5",
        ),
        ("-1 second", "-00:00:01"),
        ("0", "00:00:00"),
        (
            "-1 year -2 mons +3 days -04:05:06",
            "-1 years -2 mons +3 days -04:05:06",
        ),
        ("1 day -1 hour", "1 day -01:00:00"),
        ("25 hours", "25:00:00"),
        ("-1 day", "-1 days"),
        ("1.5 months", "1 mon 15 days"),
        ("1.5 years", "1 year 6 mons"),
        ("100000 hours", "100000:00:00"),
        ("2 hours 30 minutes", "02:30:00"),
        ("01:02:03", "01:02:03"),
        ("1 day 02:00:00", "1 day 02:00:00"),
        ("1", "00:00:01"),
        ("1 minute", "00:01:00"),
        ("1 MINUTE", "00:01:00"),
        ("1 week", "7 days"),
        ("1 ms", "00:00:00.001"),
        ("1 us", "00:00:00.000001"),
        ("3 mins 4 secs", "00:03:04"),
        ("@ 1 hour ago", "-01:00:00"),
        ("1.5", "00:00:01.5"),
        ("-01:02", "-01:02:00"),
        ("1:2", "01:02:00"),
        ("10 microseconds", "00:00:00.00001"),
        ("1d", "1 day"),
        ("3h", "03:00:00"),
        ("1 hour 30", "01:00:30"),
        ("1.5 days", "1 day 12:00:00"),
        ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
        ("-1 day 2 hours", "-1 days +02:00:00"),
        ("1 day ago", "-1 days"),
        ("2 weeks 1.5 hours", "14 days 01:30:00"),
        ("1 mon 2", "1 mon 00:00:02"),
        ("11 mons", "11 mons"),
        ("-1 mon +1 day", "-1 mons +1 day"),
        ("-01:00:00.5", "-01:00:00.5"),
        ("-1.5 sec", "-00:00:01.5"),
        ("1 day -00:00:01", "1 day -00:00:01"),
        ("1 02:00:00", "1 day 02:00:00"),
    ];
    for (input, want) in cases {
        assert_eq!(fmt(DataType::Interval, input), want, "{}", input);
    }
    for bad in [
        "abc",
        "1 fortnight",
        "1 2",
        "5 hours 1:00",
        "",
        "1 day 1 day",
    ] {
        assert!(
            fmt(DataType::Interval, bad).starts_with("ERR invalid_datetime_format"),
            "{}",
            bad
        );
    }
    assert!(fmt(DataType::Interval, "2147483648 days").starts_with("ERR datetime_field_overflow"));
    assert_eq!(
        format_interval(&Interval::new(0, 0, i64::MIN)),
        "-2562047788:00:54.775808"
    );
}

#[test]
fn other_types() {
    assert_eq!(format_datum(&ScalarValue::Boolean(true)), "t");
    assert_eq!(format_datum(&ScalarValue::Int64(-5)), "-5");
    assert_eq!(format_datum(&ScalarValue::varchar("a b")), "a b");
    assert_eq!(fmt(DataType::Varchar, " x "), " x ");
}

/// Random values (many near float boundaries) printed by PostgreSQL 15.
#[test]
fn float_output_fixtures() {
    let mut failures = Vec::new();
    for line in include_str!("float_fixtures.txt").lines() {
        if line.starts_with('#') {
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(input), Some(ty), Some(want)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let ty = if ty == "float4" {
            DataType::Float32
        } else {
            DataType::Float64
        };
        let got = fmt(ty, input);
        if got != want {
            failures.push(format!("{} {:?}: got {} want {}", input, ty, got, want));
        }
    }
    assert!(failures.is_empty(), "{:#?}", failures);
}

#[test]
fn rust_exact_formatting_rounds_ties_to_even() {
    assert_eq!(format!("{:.0e}", 2.5f64), "2e0");
    assert_eq!(format!("{:.0e}", 3.5f64), "4e0");
    assert_eq!(
        format!("{:.16e}", 1294614501454434.0f64 + 0.25),
        "1.2946145014544342e15"
    );
}
