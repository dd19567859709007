//! What went wrong, named as PostgreSQL names its error conditions.
//!
//! Every layer's error carries an [`ErrorKind`]: the binder says a relation
//! is undefined, an expression that a value is out of range, meta that an
//! object is in use. None of them picks a SQLSTATE; the wire boundary
//! (`ebbflow_pgwire::sqlstate`) alone turns a kind into the five-character
//! code a client sees, so the mapping is written once.

/// A PostgreSQL error condition (Appendix A of its manual), by name.
///
/// The variants are the conditions ebbflow raises; add one where a new
/// condition is needed, with its code in `ebbflow_pgwire::sqlstate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    ConnectionFailure,
    ProtocolViolation,
    FeatureNotSupported,
    CaseNotFound,
    CardinalityViolation,
    NumericValueOutOfRange,
    InvalidDatetimeFormat,
    DatetimeFieldOverflow,
    InvalidTimeZoneDisplacementValue,
    UntranslatableCharacter,
    SubstringError,
    DivisionByZero,
    InvalidPrecedingOrFollowingSize,
    InvalidEscapeCharacter,
    InvalidRegularExpression,
    InvalidRowCountInLimitClause,
    InvalidRowCountInResultOffsetClause,
    CharacterNotInRepertoire,
    InvalidParameterValue,
    InvalidArgumentForLogarithm,
    InvalidArgumentForPowerFunction,
    InvalidEscapeSequence,
    InvalidTextRepresentation,
    InvalidBinaryRepresentation,
    BadCopyFileFormat,
    InvalidSqlStatementName,
    InvalidAuthorizationSpecification,
    InvalidPassword,
    DependentObjectsStillExist,
    InvalidCursorName,
    InvalidSchemaName,
    InsufficientPrivilege,
    SyntaxError,
    DuplicateColumn,
    AmbiguousColumn,
    UndefinedColumn,
    UndefinedObject,
    DuplicateObject,
    DuplicateAlias,
    AmbiguousFunction,
    GroupingError,
    DatatypeMismatch,
    WrongObjectType,
    CannotCoerce,
    UndefinedFunction,
    UndefinedTable,
    UndefinedParameter,
    DuplicateTable,
    InvalidColumnReference,
    InvalidTableDefinition,
    InvalidObjectDefinition,
    IndeterminateDatatype,
    WindowingError,
    InsufficientResources,
    ProgramLimitExceeded,
    StatementTooComplex,
    TooManyColumns,
    ObjectNotInPrerequisiteState,
    ObjectInUse,
    QueryCanceled,
    AdminShutdown,
    CannotConnectNow,
    SystemError,
    IoError,
    InternalError,
}

impl ErrorKind {
    /// PostgreSQL's name of the condition (`division_by_zero`), as PL/pgSQL
    /// spells it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectionFailure => "connection_failure",
            ErrorKind::ProtocolViolation => "protocol_violation",
            ErrorKind::FeatureNotSupported => "feature_not_supported",
            ErrorKind::CaseNotFound => "case_not_found",
            ErrorKind::CardinalityViolation => "cardinality_violation",
            ErrorKind::NumericValueOutOfRange => "numeric_value_out_of_range",
            ErrorKind::InvalidDatetimeFormat => "invalid_datetime_format",
            ErrorKind::DatetimeFieldOverflow => "datetime_field_overflow",
            ErrorKind::InvalidTimeZoneDisplacementValue => "invalid_time_zone_displacement_value",
            ErrorKind::UntranslatableCharacter => "untranslatable_character",
            ErrorKind::SubstringError => "substring_error",
            ErrorKind::DivisionByZero => "division_by_zero",
            ErrorKind::InvalidPrecedingOrFollowingSize => "invalid_preceding_or_following_size",
            ErrorKind::InvalidEscapeCharacter => "invalid_escape_character",
            ErrorKind::InvalidRegularExpression => "invalid_regular_expression",
            ErrorKind::InvalidRowCountInLimitClause => "invalid_row_count_in_limit_clause",
            ErrorKind::InvalidRowCountInResultOffsetClause => {
                "invalid_row_count_in_result_offset_clause"
            }
            ErrorKind::CharacterNotInRepertoire => "character_not_in_repertoire",
            ErrorKind::InvalidParameterValue => "invalid_parameter_value",
            ErrorKind::InvalidArgumentForLogarithm => "invalid_argument_for_logarithm",
            ErrorKind::InvalidArgumentForPowerFunction => "invalid_argument_for_power_function",
            ErrorKind::InvalidEscapeSequence => "invalid_escape_sequence",
            ErrorKind::InvalidTextRepresentation => "invalid_text_representation",
            ErrorKind::InvalidBinaryRepresentation => "invalid_binary_representation",
            ErrorKind::BadCopyFileFormat => "bad_copy_file_format",
            ErrorKind::InvalidSqlStatementName => "invalid_sql_statement_name",
            ErrorKind::InvalidAuthorizationSpecification => "invalid_authorization_specification",
            ErrorKind::InvalidPassword => "invalid_password",
            ErrorKind::DependentObjectsStillExist => "dependent_objects_still_exist",
            ErrorKind::InvalidCursorName => "invalid_cursor_name",
            ErrorKind::InvalidSchemaName => "invalid_schema_name",
            ErrorKind::InsufficientPrivilege => "insufficient_privilege",
            ErrorKind::SyntaxError => "syntax_error",
            ErrorKind::DuplicateColumn => "duplicate_column",
            ErrorKind::AmbiguousColumn => "ambiguous_column",
            ErrorKind::UndefinedColumn => "undefined_column",
            ErrorKind::UndefinedObject => "undefined_object",
            ErrorKind::DuplicateObject => "duplicate_object",
            ErrorKind::DuplicateAlias => "duplicate_alias",
            ErrorKind::AmbiguousFunction => "ambiguous_function",
            ErrorKind::GroupingError => "grouping_error",
            ErrorKind::DatatypeMismatch => "datatype_mismatch",
            ErrorKind::WrongObjectType => "wrong_object_type",
            ErrorKind::CannotCoerce => "cannot_coerce",
            ErrorKind::UndefinedFunction => "undefined_function",
            ErrorKind::UndefinedTable => "undefined_table",
            ErrorKind::UndefinedParameter => "undefined_parameter",
            ErrorKind::DuplicateTable => "duplicate_table",
            ErrorKind::InvalidColumnReference => "invalid_column_reference",
            ErrorKind::InvalidTableDefinition => "invalid_table_definition",
            ErrorKind::InvalidObjectDefinition => "invalid_object_definition",
            ErrorKind::IndeterminateDatatype => "indeterminate_datatype",
            ErrorKind::WindowingError => "windowing_error",
            ErrorKind::InsufficientResources => "insufficient_resources",
            ErrorKind::ProgramLimitExceeded => "program_limit_exceeded",
            ErrorKind::StatementTooComplex => "statement_too_complex",
            ErrorKind::TooManyColumns => "too_many_columns",
            ErrorKind::ObjectNotInPrerequisiteState => "object_not_in_prerequisite_state",
            ErrorKind::ObjectInUse => "object_in_use",
            ErrorKind::QueryCanceled => "query_canceled",
            ErrorKind::AdminShutdown => "admin_shutdown",
            ErrorKind::CannotConnectNow => "cannot_connect_now",
            ErrorKind::SystemError => "system_error",
            ErrorKind::IoError => "io_error",
            ErrorKind::InternalError => "internal_error",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
