//! The one place an error's kind becomes a SQLSTATE.
//!
//! Layers below say what went wrong as an
//! [`ErrorKind`](ebbflow_common::ErrorKind); the client sees PostgreSQL's
//! code for that condition, chosen here and nowhere else.

use ebbflow_common::ErrorKind;

/// The SQLSTATE PostgreSQL sends for `kind`.
pub fn sqlstate(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ConnectionFailure => "08006",
        ErrorKind::ProtocolViolation => "08P01",
        ErrorKind::FeatureNotSupported => "0A000",
        ErrorKind::CaseNotFound => "20000",
        ErrorKind::CardinalityViolation => "21000",
        ErrorKind::NumericValueOutOfRange => "22003",
        ErrorKind::InvalidDatetimeFormat => "22007",
        ErrorKind::DatetimeFieldOverflow => "22008",
        ErrorKind::InvalidTimeZoneDisplacementValue => "22009",
        ErrorKind::UntranslatableCharacter => "22P05",
        ErrorKind::SubstringError => "22011",
        ErrorKind::DivisionByZero => "22012",
        ErrorKind::InvalidPrecedingOrFollowingSize => "22013",
        ErrorKind::InvalidEscapeCharacter => "22019",
        ErrorKind::InvalidRegularExpression => "2201B",
        ErrorKind::InvalidRowCountInLimitClause => "2201W",
        ErrorKind::InvalidRowCountInResultOffsetClause => "2201X",
        ErrorKind::CharacterNotInRepertoire => "22021",
        ErrorKind::InvalidParameterValue => "22023",
        ErrorKind::InvalidArgumentForLogarithm => "2201E",
        ErrorKind::InvalidArgumentForPowerFunction => "2201F",
        ErrorKind::InvalidEscapeSequence => "22025",
        ErrorKind::InvalidTextRepresentation => "22P02",
        ErrorKind::InvalidBinaryRepresentation => "22P03",
        ErrorKind::BadCopyFileFormat => "22P04",
        ErrorKind::InvalidSqlStatementName => "26000",
        ErrorKind::InvalidAuthorizationSpecification => "28000",
        ErrorKind::InvalidPassword => "28P01",
        ErrorKind::DependentObjectsStillExist => "2BP01",
        ErrorKind::InvalidCursorName => "34000",
        ErrorKind::InvalidSchemaName => "3F000",
        ErrorKind::InsufficientPrivilege => "42501",
        ErrorKind::SyntaxError => "42601",
        ErrorKind::DuplicateColumn => "42701",
        ErrorKind::AmbiguousColumn => "42702",
        ErrorKind::UndefinedColumn => "42703",
        ErrorKind::UndefinedObject => "42704",
        ErrorKind::DuplicateObject => "42710",
        ErrorKind::DuplicateAlias => "42712",
        ErrorKind::AmbiguousFunction => "42725",
        ErrorKind::GroupingError => "42803",
        ErrorKind::DatatypeMismatch => "42804",
        ErrorKind::WrongObjectType => "42809",
        ErrorKind::CannotCoerce => "42846",
        ErrorKind::UndefinedFunction => "42883",
        ErrorKind::UndefinedTable => "42P01",
        ErrorKind::UndefinedParameter => "42P02",
        ErrorKind::DuplicateTable => "42P07",
        ErrorKind::InvalidColumnReference => "42P10",
        ErrorKind::InvalidTableDefinition => "42P16",
        ErrorKind::InvalidObjectDefinition => "42P17",
        ErrorKind::IndeterminateDatatype => "42P18",
        ErrorKind::WindowingError => "42P20",
        ErrorKind::InsufficientResources => "53000",
        ErrorKind::ProgramLimitExceeded => "54000",
        ErrorKind::StatementTooComplex => "54001",
        ErrorKind::TooManyColumns => "54011",
        ErrorKind::ObjectNotInPrerequisiteState => "55000",
        ErrorKind::ObjectInUse => "55006",
        ErrorKind::QueryCanceled => "57014",
        ErrorKind::AdminShutdown => "57P01",
        ErrorKind::CannotConnectNow => "57P03",
        ErrorKind::SystemError => "58000",
        ErrorKind::IoError => "58030",
        ErrorKind::InternalError => "XX000",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code is five characters of PostgreSQL's alphabet and no two
    /// kinds share one.
    #[test]
    fn codes_are_distinct_and_well_formed() {
        let all = [
            ErrorKind::ConnectionFailure,
            ErrorKind::ProtocolViolation,
            ErrorKind::FeatureNotSupported,
            ErrorKind::CaseNotFound,
            ErrorKind::CardinalityViolation,
            ErrorKind::NumericValueOutOfRange,
            ErrorKind::InvalidDatetimeFormat,
            ErrorKind::DatetimeFieldOverflow,
            ErrorKind::InvalidTimeZoneDisplacementValue,
            ErrorKind::UntranslatableCharacter,
            ErrorKind::SubstringError,
            ErrorKind::DivisionByZero,
            ErrorKind::InvalidPrecedingOrFollowingSize,
            ErrorKind::InvalidEscapeCharacter,
            ErrorKind::InvalidRegularExpression,
            ErrorKind::InvalidRowCountInLimitClause,
            ErrorKind::InvalidRowCountInResultOffsetClause,
            ErrorKind::CharacterNotInRepertoire,
            ErrorKind::InvalidParameterValue,
            ErrorKind::InvalidArgumentForLogarithm,
            ErrorKind::InvalidArgumentForPowerFunction,
            ErrorKind::InvalidEscapeSequence,
            ErrorKind::InvalidTextRepresentation,
            ErrorKind::InvalidBinaryRepresentation,
            ErrorKind::BadCopyFileFormat,
            ErrorKind::InvalidSqlStatementName,
            ErrorKind::InvalidAuthorizationSpecification,
            ErrorKind::InvalidPassword,
            ErrorKind::DependentObjectsStillExist,
            ErrorKind::InvalidCursorName,
            ErrorKind::InvalidSchemaName,
            ErrorKind::InsufficientPrivilege,
            ErrorKind::SyntaxError,
            ErrorKind::DuplicateColumn,
            ErrorKind::AmbiguousColumn,
            ErrorKind::UndefinedColumn,
            ErrorKind::UndefinedObject,
            ErrorKind::DuplicateObject,
            ErrorKind::DuplicateAlias,
            ErrorKind::AmbiguousFunction,
            ErrorKind::GroupingError,
            ErrorKind::DatatypeMismatch,
            ErrorKind::WrongObjectType,
            ErrorKind::CannotCoerce,
            ErrorKind::UndefinedFunction,
            ErrorKind::UndefinedTable,
            ErrorKind::UndefinedParameter,
            ErrorKind::DuplicateTable,
            ErrorKind::InvalidColumnReference,
            ErrorKind::InvalidTableDefinition,
            ErrorKind::InvalidObjectDefinition,
            ErrorKind::IndeterminateDatatype,
            ErrorKind::WindowingError,
            ErrorKind::InsufficientResources,
            ErrorKind::ProgramLimitExceeded,
            ErrorKind::StatementTooComplex,
            ErrorKind::TooManyColumns,
            ErrorKind::ObjectNotInPrerequisiteState,
            ErrorKind::ObjectInUse,
            ErrorKind::QueryCanceled,
            ErrorKind::AdminShutdown,
            ErrorKind::CannotConnectNow,
            ErrorKind::SystemError,
            ErrorKind::IoError,
            ErrorKind::InternalError,
        ];
        let mut seen = std::collections::HashSet::new();
        for kind in all {
            let code = sqlstate(kind);
            assert_eq!(code.len(), 5, "{kind}");
            assert!(code
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()));
            assert!(seen.insert(code), "{code} twice");
        }
    }
}
