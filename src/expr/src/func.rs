//! The scalar functions and operators, with their SQL names (what the
//! binder looks up, and what errors and EXPLAIN print).

/// Scalar functions and operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Func {
    // arithmetic
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Neg,
    // comparison
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    IsDistinctFrom,
    IsNotDistinctFrom,
    // logic
    And,
    Or,
    Not,
    IsNull,
    IsNotNull,
    IsTrue,
    IsNotTrue,
    IsFalse,
    IsNotFalse,
    // conditional
    Coalesce,
    NullIf,
    Greatest,
    Least,
    // strings
    Concat, // the `||` operator
    Lower,
    Upper,
    Length,
    /// `substr(string, from [, count])`.
    Substr,
    /// `btrim(string [, characters])`, i.e. `TRIM([BOTH] [chars FROM] s)`.
    Trim,
    /// `[string, pattern]` or `[string, pattern, escape]`.
    Like,
    NotLike,
    ILike,
    NotILike,
    /// `replace(string, from, to)`.
    Replace,
    /// `split_part(string, delimiter, n)`.
    SplitPart,
    /// The one input of a `string_agg(value, delimiter [ORDER BY keys])`
    /// call, as `[value, delimiter, directions, keys...]`: see
    /// [`super::agg::pack_string_agg_input`]. Internal (no SQL name).
    StringAggInput,
    /// The one input of an `array_agg(value [ORDER BY keys])` call, as
    /// `[value, directions, keys...]`: see
    /// [`super::agg::pack_array_agg_input`]. Internal (no SQL name).
    ArrayAggInput,
    /// Arguments `[substring, string]`, the order of `POSITION(sub IN s)`.
    Position,
    // math
    Round,
    Abs,
    Ceil,
    Floor,
    /// `ltrim(string [, characters])`, `TRIM(LEADING ...)`.
    LTrim,
    /// `rtrim(string [, characters])`, `TRIM(TRAILING ...)`.
    RTrim,
    /// `~`, `!~`, `~*`, `!~*`: POSIX-style regular expression match.
    RegexMatch,
    RegexNotMatch,
    RegexIMatch,
    RegexNotIMatch,
    QuoteIdent,
    /// `concat(a, b, …)`: the arguments' text forms, NULLs skipped.
    ConcatFn,
    /// `concat_ws(separator, a, b, …)`.
    ConcatWs,
    /// `date_trunc(unit, timestamp)`.
    DateTrunc,
    /// `extract(unit FROM timestamp | date)`, as `[unit, source]`: numeric.
    Extract,
    /// `date_part(unit, timestamp)`: double precision.
    DatePart,
    JustifyHours,
    JustifyDays,
    JustifyInterval,
    /// `age(timestamp, timestamp)`: the difference in years, months, days.
    Age,
    /// `to_char(timestamp, template)` (a date is cast to timestamp).
    ToChar,
    /// `tumble_start(timestamp, size [, offset])`: the start of the
    /// tumbling window holding the time (see [`super::window`]).
    TumbleStart,
    /// `[count, value]`: the value of a scalar subquery decorrelated into
    /// a join with a grouped aggregate, where `count` is how many rows the
    /// subquery had for this outer row; more than one is an error (cardinality_violation).
    ScalarSubquery,
    // arrays (see [`super::array`])
    /// `ARRAY[e1, e2, …]`: the arguments, NULLs included, as an array.
    ArrayConstruct,
    /// `a[i]`: `[array, int4 index]`, NULL out of range.
    ArraySubscript,
    /// `a[i:j]`: `[array, int4 lower, int4 upper]` (an omitted bound is
    /// bound as 1 or `i32::MAX`).
    ArraySlice,
    /// `array_length(a, dim)`.
    ArrayLength,
    /// `cardinality(a)`.
    Cardinality,
    /// `array_to_string(a, sep [, null_str])`, RisingWave's `array_join`.
    ArrayToString,
    /// `array_cat(a, b)`, `a || b` for two arrays.
    ArrayCat,
    /// `array_append(a, e)`, `a || e`.
    ArrayAppend,
    /// `array_prepend(e, a)`, `e || a`.
    ArrayPrepend,
    /// `array_position(a, e)`: 1-based, NULL if absent (`IS NOT DISTINCT`).
    ArrayPosition,
    /// `x = ANY(array)` as `[x, array]`.
    EqAny,
    // regular expressions (see [`super::regexp`])
    /// `regexp_match(string, pattern [, flags])`: `varchar[]`.
    RegexpMatch,
    /// `regexp_replace(string, pattern, replacement [, flags])`.
    RegexpReplace,
    // mathematical functions (see [`super::math`])
    Sqrt,
    Cbrt,
    Exp,
    Ln,
    /// `log(x)` is `log10(x)`; `log(b, x)` (numeric only) is not yet.
    Log,
    Log10,
    /// `power(x, y)`, `pow(x, y)`.
    Power,
    Sign,
    /// `trunc(x)`, `trunc(numeric, digits)`.
    Trunc,
    /// `div(y, x)`: the integer quotient, towards zero (numeric).
    DivTrunc,
    Gcd,
    Lcm,
    Pi,
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
    // more string functions (see [`super::text_funcs`])
    Left,
    Right,
    LPad,
    RPad,
    Repeat,
    Reverse,
    InitCap,
    StartsWith,
    StrPos,
    Translate,
    Chr,
    Ascii,
    ToHex,
    QuoteLiteral,
    Md5,
    // dates and timestamps from fields (see [`super::calendar`])
    MakeDate,
    MakeTimestamp,
    /// `date_bin(stride, timestamp, origin)`.
    DateBin,
    // time zones (see [`super::zoned`])
    /// `timezone(zone, value)`, i.e. `value AT TIME ZONE zone`.
    Timezone,
    /// `[value, zone]`: a cast that depends on the time zone (to or from
    /// `timestamptz`), in the zone the statement was bound in. Internal.
    CastInZone,
    // jsonb (see [`super::jsonb`])
    /// `->`: a field by key or an element by index.
    JsonbGet,
    /// `->>`: the same as text.
    JsonbGetText,
    /// `#>`: by a path of keys and indexes.
    JsonbGetPath,
    /// `#>>`: the same as text.
    JsonbGetPathText,
    /// `@>`.
    JsonbContains,
    /// `<@`.
    JsonbContainedBy,
    /// `?`: a key (or a string element) exists.
    JsonbExists,
    /// `?|`: any of the keys exists.
    JsonbExistsAny,
    /// `?&`: all of the keys exist.
    JsonbExistsAll,
    /// `||` over jsonb.
    JsonbConcat,
    /// `-` over jsonb: a key, an index or keys.
    JsonbDelete,
    /// `#-`: the element at a path.
    JsonbDeletePath,
    JsonbTypeof,
    JsonbArrayLength,
    JsonbBuildObject,
    JsonbBuildArray,
    ToJsonb,
    JsonbStripNulls,
    JsonbSet,
    JsonbExtractPath,
    JsonbExtractPathText,
    JsonbPretty,
    /// The end of `jsonb_object_agg`: an array of `[key, value]` pairs as
    /// an object. Internal.
    JsonbObjectFromPairs,
    /// The rows of `jsonb_array_elements(j)` as a `jsonb[]` (what
    /// `unnest` expands). Internal, as the three below.
    JsonbElements,
    /// `jsonb_array_elements_text(j)` as a `text[]`.
    JsonbElementsText,
    /// `jsonb_object_keys(j)` as a `text[]`.
    JsonbKeys,
    /// `jsonb_each(j)` as a `jsonb[]` of `[key, value]` pairs.
    JsonbEachPairs,
    /// `gen_random_uuid()`: a random version-4 UUID per call (volatile).
    GenRandomUuid,
    // bytea (see [`super::bytea`])
    Sha256,
    /// `encode(bytea, format)`.
    Encode,
    /// `decode(text, format)`.
    Decode,
    // splitting (see [`super::split`])
    StringToArray,
    RegexpSplitToArray,
    RegexpCount,
    /// `to_timestamp(seconds)`: seconds since 1970-01-01 00:00 UTC.
    ToTimestamp,
}

impl Func {
    /// What an argument at `pos` of unknown type (a quoted literal, NULL)
    /// is read as, for the functions of [`super::math`],
    /// [`super::text_funcs`] and [`super::calendar`] (`None`: the binder's
    /// own rule).
    pub fn unknown_arg_type(self, pos: usize) -> Option<ebbflow_common::DataType> {
        use ebbflow_common::DataType;
        if super::text_funcs::owns(self) {
            return Some(super::text_funcs::unknown_arg_type(self, pos));
        }
        if super::calendar::owns(self) {
            return Some(super::calendar::unknown_arg_type(self, pos));
        }
        if super::jsonb::owns(self) {
            return Some(super::jsonb::unknown_arg_type(self, pos));
        }
        if super::split::owns(self) {
            return Some(super::split::unknown_arg_type(self, pos));
        }
        Some(match self {
            Func::Trunc if pos == 1 => DataType::Int32,
            Func::DivTrunc => DataType::Decimal,
            Func::Gcd | Func::Lcm => return None,
            f if super::math::owns(f) => DataType::Float64,
            Func::Sha256 | Func::Encode if pos == 0 => DataType::Bytea,
            Func::Encode | Func::Decode => DataType::Varchar,
            Func::ToTimestamp => DataType::Float64,
            _ => return None,
        })
    }

    /// Look a function up by its SQL name (lower case), e.g. `"lower"`,
    /// `"substring"`/`"substr"`, `"char_length"`/`"length"`.
    pub fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "coalesce" => Func::Coalesce,
            "nullif" => Func::NullIf,
            "greatest" => Func::Greatest,
            "least" => Func::Least,
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "substr" | "substring" => Func::Substr,
            "trim" | "btrim" => Func::Trim,
            "ltrim" => Func::LTrim,
            "rtrim" => Func::RTrim,
            "replace" => Func::Replace,
            "split_part" => Func::SplitPart,
            "position" => Func::Position,
            "round" => Func::Round,
            "abs" => Func::Abs,
            "ceil" | "ceiling" => Func::Ceil,
            "floor" => Func::Floor,
            "quote_ident" => Func::QuoteIdent,
            "concat" => Func::ConcatFn,
            "concat_ws" => Func::ConcatWs,
            "date_trunc" => Func::DateTrunc,
            "extract" => Func::Extract,
            "date_part" => Func::DatePart,
            "justify_hours" => Func::JustifyHours,
            "justify_days" => Func::JustifyDays,
            "justify_interval" => Func::JustifyInterval,
            "age" => Func::Age,
            "to_char" => Func::ToChar,
            "tumble_start" => Func::TumbleStart,
            "array_length" => Func::ArrayLength,
            "cardinality" => Func::Cardinality,
            "array_to_string" | "array_join" => Func::ArrayToString,
            "array_cat" => Func::ArrayCat,
            "array_append" => Func::ArrayAppend,
            "array_prepend" => Func::ArrayPrepend,
            "array_position" => Func::ArrayPosition,
            "regexp_match" => Func::RegexpMatch,
            "regexp_replace" => Func::RegexpReplace,
            "mod" => Func::Mod,
            "sqrt" => Func::Sqrt,
            "cbrt" => Func::Cbrt,
            "exp" => Func::Exp,
            "ln" => Func::Ln,
            "log" => Func::Log,
            "log10" => Func::Log10,
            "power" | "pow" => Func::Power,
            "sign" => Func::Sign,
            "trunc" => Func::Trunc,
            "div" => Func::DivTrunc,
            "gcd" => Func::Gcd,
            "lcm" => Func::Lcm,
            "pi" => Func::Pi,
            "degrees" => Func::Degrees,
            "radians" => Func::Radians,
            "sin" => Func::Sin,
            "cos" => Func::Cos,
            "tan" => Func::Tan,
            "cot" => Func::Cot,
            "asin" => Func::Asin,
            "acos" => Func::Acos,
            "atan" => Func::Atan,
            "atan2" => Func::Atan2,
            "left" => Func::Left,
            "right" => Func::Right,
            "lpad" => Func::LPad,
            "rpad" => Func::RPad,
            "repeat" => Func::Repeat,
            "reverse" => Func::Reverse,
            "initcap" => Func::InitCap,
            "starts_with" => Func::StartsWith,
            "strpos" => Func::StrPos,
            "translate" => Func::Translate,
            "chr" => Func::Chr,
            "ascii" => Func::Ascii,
            "to_hex" => Func::ToHex,
            "quote_literal" => Func::QuoteLiteral,
            "md5" => Func::Md5,
            "make_date" => Func::MakeDate,
            "make_timestamp" => Func::MakeTimestamp,
            "date_bin" => Func::DateBin,
            "timezone" => Func::Timezone,
            "gen_random_uuid" => Func::GenRandomUuid,
            "sha256" => Func::Sha256,
            "encode" => Func::Encode,
            "decode" => Func::Decode,
            "string_to_array" => Func::StringToArray,
            "regexp_split_to_array" => Func::RegexpSplitToArray,
            "regexp_count" => Func::RegexpCount,
            "to_timestamp" => Func::ToTimestamp,
            "jsonb_typeof" | "json_typeof" => Func::JsonbTypeof,
            "jsonb_array_length" | "json_array_length" => Func::JsonbArrayLength,
            "jsonb_build_object" | "json_build_object" => Func::JsonbBuildObject,
            "jsonb_build_array" | "json_build_array" => Func::JsonbBuildArray,
            "to_jsonb" | "to_json" => Func::ToJsonb,
            "jsonb_strip_nulls" | "json_strip_nulls" => Func::JsonbStripNulls,
            "jsonb_set" => Func::JsonbSet,
            "jsonb_extract_path" | "json_extract_path" => Func::JsonbExtractPath,
            "jsonb_extract_path_text" | "json_extract_path_text" => Func::JsonbExtractPathText,
            "jsonb_pretty" => Func::JsonbPretty,
            _ => return None,
        })
    }

    /// The operator symbol, for operators (used in error messages).
    pub fn operator_symbol(self) -> Option<&'static str> {
        Some(match self {
            Func::Add => "+",
            Func::Sub | Func::Neg => "-",
            Func::Mul => "*",
            Func::Div => "/",
            Func::Mod => "%",
            Func::Eq | Func::IsDistinctFrom | Func::IsNotDistinctFrom | Func::EqAny => "=",
            Func::NotEq => "<>",
            Func::Lt => "<",
            Func::LtEq => "<=",
            Func::Gt => ">",
            Func::GtEq => ">=",
            Func::Concat => "||",
            Func::Like | Func::NotLike => "~~",
            Func::RegexMatch => "~",
            Func::RegexNotMatch => "!~",
            Func::RegexIMatch => "~*",
            Func::RegexNotIMatch => "!~*",
            Func::ILike | Func::NotILike => "~~*",
            f if super::jsonb::is_operator(f) => self.name(),
            _ => return None,
        })
    }

    /// The SQL function name (for error messages and EXPLAIN).
    pub fn name(self) -> &'static str {
        match self {
            Func::Add => "add",
            Func::Sub => "subtract",
            Func::Mul => "multiply",
            Func::Div => "divide",
            Func::Mod => "modulus",
            Func::Neg => "neg",
            Func::Eq => "equal",
            Func::NotEq => "not_equal",
            Func::Lt => "less_than",
            Func::LtEq => "less_than_or_equal",
            Func::Gt => "greater_than",
            Func::GtEq => "greater_than_or_equal",
            Func::IsDistinctFrom => "is_distinct_from",
            Func::IsNotDistinctFrom => "is_not_distinct_from",
            Func::And => "and",
            Func::Or => "or",
            Func::Not => "not",
            Func::IsNull => "is_null",
            Func::IsNotNull => "is_not_null",
            Func::IsTrue => "is_true",
            Func::IsNotTrue => "is_not_true",
            Func::IsFalse => "is_false",
            Func::IsNotFalse => "is_not_false",
            Func::Coalesce => "coalesce",
            Func::NullIf => "nullif",
            Func::Greatest => "greatest",
            Func::Least => "least",
            Func::Concat => "concat_op",
            Func::Lower => "lower",
            Func::Upper => "upper",
            Func::Length => "length",
            Func::Substr => "substr",
            Func::Trim => "btrim",
            Func::LTrim => "ltrim",
            Func::RTrim => "rtrim",
            Func::Like => "like",
            Func::NotLike => "not_like",
            Func::ILike => "ilike",
            Func::NotILike => "not_ilike",
            Func::Replace => "replace",
            Func::SplitPart => "split_part",
            Func::StringAggInput => "string_agg_input",
            Func::ArrayAggInput => "array_agg_input",
            Func::Position => "position",
            Func::Round => "round",
            Func::Abs => "abs",
            Func::Ceil => "ceil",
            Func::Floor => "floor",
            Func::RegexMatch => "textregexeq",
            Func::RegexNotMatch => "textregexne",
            Func::RegexIMatch => "texticregexeq",
            Func::RegexNotIMatch => "texticregexne",
            Func::QuoteIdent => "quote_ident",
            Func::ConcatFn => "concat",
            Func::ConcatWs => "concat_ws",
            Func::DateTrunc => "date_trunc",
            Func::ToChar => "to_char",
            Func::TumbleStart => "tumble_start",
            Func::Extract => "extract",
            Func::DatePart => "date_part",
            Func::JustifyHours => "justify_hours",
            Func::JustifyDays => "justify_days",
            Func::JustifyInterval => "justify_interval",
            Func::Age => "age",
            Func::ScalarSubquery => "scalar subquery",
            Func::ArrayConstruct => "array",
            Func::ArraySubscript => "array_subscript",
            Func::ArraySlice => "array_slice",
            Func::ArrayLength => "array_length",
            Func::Cardinality => "cardinality",
            Func::ArrayToString => "array_to_string",
            Func::ArrayCat => "array_cat",
            Func::ArrayAppend => "array_append",
            Func::ArrayPrepend => "array_prepend",
            Func::ArrayPosition => "array_position",
            Func::EqAny => "any",
            Func::RegexpMatch => "regexp_match",
            Func::RegexpReplace => "regexp_replace",
            Func::Sqrt => "sqrt",
            Func::Cbrt => "cbrt",
            Func::Exp => "exp",
            Func::Ln => "ln",
            Func::Log => "log",
            Func::Log10 => "log10",
            Func::Power => "power",
            Func::Sign => "sign",
            Func::Trunc => "trunc",
            Func::DivTrunc => "div",
            Func::Gcd => "gcd",
            Func::Lcm => "lcm",
            Func::Pi => "pi",
            Func::Degrees => "degrees",
            Func::Radians => "radians",
            Func::Sin => "sin",
            Func::Cos => "cos",
            Func::Tan => "tan",
            Func::Cot => "cot",
            Func::Asin => "asin",
            Func::Acos => "acos",
            Func::Atan => "atan",
            Func::Atan2 => "atan2",
            Func::Left => "left",
            Func::Right => "right",
            Func::LPad => "lpad",
            Func::RPad => "rpad",
            Func::Repeat => "repeat",
            Func::Reverse => "reverse",
            Func::InitCap => "initcap",
            Func::StartsWith => "starts_with",
            Func::StrPos => "strpos",
            Func::Translate => "translate",
            Func::Chr => "chr",
            Func::Ascii => "ascii",
            Func::ToHex => "to_hex",
            Func::QuoteLiteral => "quote_literal",
            Func::Md5 => "md5",
            Func::MakeDate => "make_date",
            Func::MakeTimestamp => "make_timestamp",
            Func::DateBin => "date_bin",
            Func::Timezone => "timezone",
            Func::CastInZone => "cast",
            Func::JsonbGet => "->",
            Func::JsonbGetText => "->>",
            Func::JsonbGetPath => "#>",
            Func::JsonbGetPathText => "#>>",
            Func::JsonbContains => "@>",
            Func::JsonbContainedBy => "<@",
            Func::JsonbExists => "?",
            Func::JsonbExistsAny => "?|",
            Func::JsonbExistsAll => "?&",
            Func::JsonbConcat => "||",
            Func::JsonbDelete => "-",
            Func::JsonbDeletePath => "#-",
            Func::JsonbTypeof => "jsonb_typeof",
            Func::JsonbArrayLength => "jsonb_array_length",
            Func::JsonbBuildObject => "jsonb_build_object",
            Func::JsonbBuildArray => "jsonb_build_array",
            Func::ToJsonb => "to_jsonb",
            Func::JsonbStripNulls => "jsonb_strip_nulls",
            Func::JsonbSet => "jsonb_set",
            Func::JsonbExtractPath => "jsonb_extract_path",
            Func::JsonbExtractPathText => "jsonb_extract_path_text",
            Func::JsonbPretty => "jsonb_pretty",
            Func::JsonbObjectFromPairs => "jsonb_object_agg",
            Func::JsonbElements => "jsonb_array_elements",
            Func::JsonbElementsText => "jsonb_array_elements_text",
            Func::JsonbKeys => "jsonb_object_keys",
            Func::JsonbEachPairs => "jsonb_each",
            Func::GenRandomUuid => "gen_random_uuid",
            Func::Sha256 => "sha256",
            Func::Encode => "encode",
            Func::Decode => "decode",
            Func::StringToArray => "string_to_array",
            Func::RegexpSplitToArray => "regexp_split_to_array",
            Func::RegexpCount => "regexp_count",
            Func::ToTimestamp => "to_timestamp",
        }
    }
}
