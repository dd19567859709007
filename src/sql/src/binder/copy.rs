//! `COPY t [(cols)] FROM STDIN` and `COPY {t [(cols)] | (query)} TO STDOUT`
//! with `[WITH] (FORMAT text|csv, HEADER, DELIMITER, NULL, QUOTE, ESCAPE)`.
//! Files and programs are refused: the server reads nothing from its own
//! disk on a client's behalf.

use ebbflow_common::ErrorKind;
use sqlparser::ast::{
    self, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget,
};

use super::Binder;
use crate::parser::ident_value;
use crate::{BoundStatement, SqlError, SqlResult};
use ebbflow_meta::catalog::RelationKind;

/// `FORMAT` of a COPY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
}

/// The options of one COPY, the format's defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub delimiter: char,
    /// The string that means NULL (`\N` in text, empty in csv).
    pub null: String,
    pub header: bool,
    pub quote: char,
    pub escape: char,
}

impl CopyOptions {
    pub fn new(format: CopyFormat) -> Self {
        let text = format == CopyFormat::Text;
        CopyOptions {
            format,
            delimiter: if text { '\t' } else { ',' },
            null: if text { "\\N" } else { "" }.to_owned(),
            header: false,
            quote: '"',
            escape: '"',
        }
    }
}

/// Options as written, before the format's defaults apply.
#[derive(Default)]
struct Given {
    format: Option<CopyFormat>,
    delimiter: Option<char>,
    null: Option<String>,
    header: Option<bool>,
    quote: Option<char>,
    escape: Option<char>,
}

fn option_error(what: &str) -> SqlError {
    SqlError::new(
        ErrorKind::FeatureNotSupported,
        format!("COPY option {what} is not supported"),
    )
}

impl Given {
    fn option(&mut self, o: &CopyOption) -> SqlResult<()> {
        match o {
            CopyOption::Format(f) => {
                self.format = Some(match f.value.to_ascii_lowercase().as_str() {
                    "text" => CopyFormat::Text,
                    "csv" => CopyFormat::Csv,
                    "binary" => return Err(SqlError::unsupported("COPY in binary format")),
                    other => {
                        return Err(SqlError::new(
                            ErrorKind::InvalidParameterValue,
                            format!("COPY format \"{other}\" not recognized"),
                        ))
                    }
                })
            }
            CopyOption::Delimiter(c) => self.delimiter = Some(*c),
            CopyOption::Null(s) => self.null = Some(s.clone()),
            CopyOption::Header(h) => self.header = Some(*h),
            CopyOption::Quote(c) => self.quote = Some(*c),
            CopyOption::Escape(c) => self.escape = Some(*c),
            CopyOption::Freeze(_) => {}
            CopyOption::Encoding(e) => {
                let e = e.to_ascii_uppercase().replace(['-', '_'], "");
                if e != "UTF8" {
                    return Err(option_error("ENCODING other than UTF8"));
                }
            }
            CopyOption::ForceQuote(_) => return Err(option_error("FORCE_QUOTE")),
            CopyOption::ForceNotNull(_) => return Err(option_error("FORCE_NOT_NULL")),
            CopyOption::ForceNull(_) => return Err(option_error("FORCE_NULL")),
        }
        Ok(())
    }

    /// The pre-9.0 syntax psql and old drivers still send:
    /// `WITH DELIMITER ',' NULL '' CSV HEADER`.
    fn legacy(&mut self, o: &CopyLegacyOption) -> SqlResult<()> {
        match o {
            CopyLegacyOption::Delimiter(c) => self.delimiter = Some(*c),
            CopyLegacyOption::Null(s) => self.null = Some(s.clone()),
            CopyLegacyOption::Header => self.header = Some(true),
            CopyLegacyOption::Binary => return Err(SqlError::unsupported("COPY in binary format")),
            CopyLegacyOption::Csv(opts) => {
                self.format = Some(CopyFormat::Csv);
                for o in opts {
                    match o {
                        CopyLegacyCsvOption::Header => self.header = Some(true),
                        CopyLegacyCsvOption::Quote(c) => self.quote = Some(*c),
                        CopyLegacyCsvOption::Escape(c) => self.escape = Some(*c),
                        other => return Err(option_error(&other.to_string())),
                    }
                }
            }
            other => return Err(option_error(&other.to_string())),
        }
        Ok(())
    }

    fn finish(self) -> SqlResult<CopyOptions> {
        let format = self.format.unwrap_or(CopyFormat::Text);
        let csv = format == CopyFormat::Csv;
        let mut o = CopyOptions::new(format);
        if let Some(d) = self.delimiter {
            o.delimiter = d;
        }
        if let Some(n) = self.null {
            o.null = n;
        }
        o.header = self.header.unwrap_or(false);
        if !csv && (self.quote.is_some() || self.escape.is_some()) {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "COPY quote and escape are available only in CSV mode",
            ));
        }
        if let Some(q) = self.quote {
            o.quote = q;
        }
        // ESCAPE defaults to QUOTE.
        o.escape = self.escape.unwrap_or(o.quote);
        if matches!(o.delimiter, '\n' | '\r') || (!csv && o.delimiter == '\\') {
            return Err(SqlError::new(
                ErrorKind::InvalidParameterValue,
                "COPY delimiter cannot be newline, carriage return or backslash",
            ));
        }
        if csv && o.delimiter == o.quote {
            return Err(SqlError::new(
                ErrorKind::InvalidParameterValue,
                "COPY delimiter and quote must be different",
            ));
        }
        if o.null.contains(['\n', '\r']) {
            return Err(SqlError::new(
                ErrorKind::InvalidParameterValue,
                "COPY null representation cannot use newline or carriage return",
            ));
        }
        Ok(o)
    }
}

impl Binder<'_> {
    pub(super) fn bind_copy(
        &mut self,
        source: &CopySource,
        to: bool,
        target: &CopyTarget,
        options: &[CopyOption],
        legacy_options: &[CopyLegacyOption],
    ) -> SqlResult<BoundStatement> {
        match (to, target) {
            (false, CopyTarget::Stdin) | (true, CopyTarget::Stdout) => {}
            _ => {
                let mut e = SqlError::new(
                    ErrorKind::InsufficientPrivilege,
                    "COPY to or from a file or program is not allowed: the server reads and writes only the client's STDIN and STDOUT",
                );
                e.set_hint(Some(
                    "Use COPY … FROM STDIN or TO STDOUT (psql's \\copy does this).".into(),
                ));
                return Err(e);
            }
        }
        let mut given = Given::default();
        for o in options {
            given.option(o)?;
        }
        for o in legacy_options {
            given.legacy(o)?;
        }
        let options = given.finish()?;
        if to {
            return self.bind_copy_to(source, options);
        }
        let CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(SqlError::syntax("COPY (query) FROM is not allowed"));
        };
        let table = self.lookup_relation(table_name)?;
        match table.kind {
            RelationKind::Table => {}
            kind => {
                return Err(SqlError::new(
                    ErrorKind::WrongObjectType,
                    format!("cannot copy to {} \"{}\"", kind.name(), table.name),
                ))
            }
        }
        let columns = if columns.is_empty() {
            table.visible_columns().map(|(i, _)| i).collect()
        } else {
            let mut picked: Vec<usize> = Vec::with_capacity(columns.len());
            for c in columns {
                let name = ident_value(&c.value, c.quote_style);
                let i = table
                    .visible_columns()
                    .find(|(_, col)| col.name == name)
                    .map(|(i, _)| i)
                    .ok_or_else(|| {
                        SqlError::new(
                            ErrorKind::UndefinedColumn,
                            format!(
                                "column \"{name}\" of relation \"{}\" does not exist",
                                table.name
                            ),
                        )
                    })?;
                if picked.contains(&i) {
                    return Err(SqlError::new(
                        ErrorKind::DuplicateColumn,
                        format!("column \"{name}\" specified more than once"),
                    ));
                }
                picked.push(i);
            }
            picked
        };
        Ok(BoundStatement::CopyFrom {
            table,
            columns,
            options,
        })
    }

    fn bind_copy_to(
        &mut self,
        source: &CopySource,
        options: CopyOptions,
    ) -> SqlResult<BoundStatement> {
        let query = match source {
            CopySource::Query(q) => q.clone(),
            CopySource::Table {
                table_name,
                columns,
            } => {
                let list = if columns.is_empty() {
                    "*".to_owned()
                } else {
                    columns
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let sql = format!("SELECT {list} FROM {table_name}");
                let dialect = sqlparser::dialect::PostgreSqlDialect {};
                let mut parsed = sqlparser::parser::Parser::parse_sql(&dialect, &sql)
                    .map_err(|e| SqlError::syntax(e.to_string()))?;
                match parsed.pop() {
                    Some(ast::Statement::Query(q)) => q,
                    _ => return Err(SqlError::syntax("COPY source is not a relation")),
                }
            }
        };
        let bq = self.bind_query(&query)?;
        Ok(BoundStatement::CopyTo {
            plan: bq.plan,
            names: bq.names,
            options,
        })
    }
}
