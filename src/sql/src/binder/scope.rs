//! Name resolution: the columns a clause can see.

use crate::{SqlError, SqlResult};
use ebbflow_common::DataType;
use ebbflow_common::ErrorKind;

/// One column of the row a clause is bound over.
#[derive(Clone, Debug)]
pub(super) struct ScopeColumn {
    /// The table name or alias that qualifies the column (`None` for the
    /// merged column of a `FULL JOIN ... USING`).
    pub table: Option<String>,
    pub name: String,
    pub ty: DataType,
    /// Hidden columns (row ids, stream keys) exist in the row but users
    /// cannot name them.
    pub hidden: bool,
    /// Whether an unqualified name finds this column (false for the
    /// redundant copy of a `USING` column).
    pub unqualified: bool,
}

/// The columns of the input row, positionally (column `i` is `InputRef(i)`).
#[derive(Clone, Debug, Default)]
pub(super) struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// What `*` expands to, in order.
    pub star: Vec<usize>,
    /// Table names/aliases introduced by the FROM clause.
    pub tables: Vec<String>,
}

impl Scope {
    /// The scope of one relation (or subquery) named `table`.
    pub fn of_relation(
        table: Option<&str>,
        cols: impl IntoIterator<Item = (String, DataType, bool)>,
    ) -> Scope {
        let mut scope = Scope::default();
        for (i, (name, ty, hidden)) in cols.into_iter().enumerate() {
            // Fields of a record column are reached by field access only.
            let hidden = hidden || super::composite::is_field_column(&name);
            if !hidden {
                scope.star.push(i);
            }
            scope.columns.push(ScopeColumn {
                table: table.map(str::to_string),
                name,
                ty,
                hidden,
                unqualified: true,
            });
        }
        if let Some(t) = table {
            scope.tables.push(t.to_string());
        }
        scope
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// `self` followed by `other`, as the row of a join. Fails when both
    /// sides introduce the same table name (PostgreSQL duplicate_alias).
    pub fn concat(mut self, other: Scope) -> SqlResult<Scope> {
        for t in &other.tables {
            if self.tables.contains(t) {
                return Err(SqlError::new(
                    ErrorKind::DuplicateAlias,
                    format!("table name \"{t}\" specified more than once"),
                ));
            }
        }
        let offset = self.columns.len();
        self.columns.extend(other.columns);
        self.star.extend(other.star.into_iter().map(|i| i + offset));
        self.tables.extend(other.tables);
        Ok(self)
    }

    /// Re-qualify every column with `alias` (a derived table or a
    /// parenthesised join with an alias).
    pub fn requalify(&mut self, alias: &str) {
        for c in &mut self.columns {
            c.table = Some(alias.to_string());
            c.unqualified = true;
        }
        self.tables = vec![alias.to_string()];
    }

    /// Find the column a (possibly qualified) name refers to.
    pub fn resolve(&self, qualifier: Option<&str>, name: &str) -> SqlResult<usize> {
        let mut found = None;
        for (i, c) in self.columns.iter().enumerate() {
            if c.hidden || c.name != name {
                continue;
            }
            let ok = match qualifier {
                Some(q) => c.table.as_deref() == Some(q),
                None => c.unqualified,
            };
            if ok {
                if found.is_some() {
                    let shown = match qualifier {
                        Some(q) => format!("{q}.{name}"),
                        None => name.to_string(),
                    };
                    return Err(SqlError::new(
                        ErrorKind::AmbiguousColumn,
                        format!("column reference \"{shown}\" is ambiguous"),
                    ));
                }
                found = Some(i);
            }
        }
        match (found, qualifier) {
            (Some(i), _) => Ok(i),
            (None, None) => Err(SqlError::new(
                ErrorKind::UndefinedColumn,
                format!("column \"{name}\" does not exist"),
            )),
            (None, Some(q)) => {
                if self.tables.iter().any(|t| t == q) {
                    Err(SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!("column {q}.{name} does not exist"),
                    ))
                } else {
                    Err(SqlError::new(
                        ErrorKind::UndefinedTable,
                        format!("missing FROM-clause entry for table \"{q}\""),
                    ))
                }
            }
        }
    }

    /// Field `field` of record column `column` (see
    /// [`field_column`](super::composite::field_column)).
    pub fn resolve_field(
        &self,
        qualifier: Option<&str>,
        column: &str,
        field: &str,
    ) -> SqlResult<usize> {
        let name = super::composite::field_column(column, field);
        let found = self.columns.iter().position(|c| {
            c.name == name
                && match qualifier {
                    Some(q) => c.table.as_deref() == Some(q),
                    None => c.unqualified,
                }
        });
        if let Some(i) = found {
            return Ok(i);
        }
        if self.has_field_columns(column) {
            return Err(SqlError::new(
                ErrorKind::UndefinedColumn,
                format!("could not identify column \"{field}\" in record data type"),
            ));
        }
        // Not a record: a plain column gets PostgreSQL's message for it.
        let i = self.resolve(qualifier, column)?;
        Err(SqlError::new(
            ErrorKind::WrongObjectType,
            format!(
                "column notation .{field} applied to type {}, which is not a composite type",
                self.columns[i].ty.pg_name()
            ),
        ))
    }

    /// Whether some column is a field of record column `column`.
    pub fn has_field_columns(&self, column: &str) -> bool {
        let prefix = super::composite::field_column(column, "");
        self.columns.iter().any(|c| c.name.starts_with(&prefix))
    }

    /// The visible columns of table `q` (`q.*`).
    pub fn table_star(&self, q: &str) -> SqlResult<Vec<usize>> {
        if !self.tables.iter().any(|t| t == q) {
            return Err(SqlError::new(
                ErrorKind::UndefinedTable,
                format!("missing FROM-clause entry for table \"{q}\""),
            ));
        }
        Ok(self
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.hidden && c.table.as_deref() == Some(q))
            .map(|(i, _)| i)
            .collect())
    }

    /// `t.x` or `x`, for messages.
    pub fn display_name(&self, i: usize) -> String {
        let c = &self.columns[i];
        match &c.table {
            Some(t) => format!("{t}.{}", c.name),
            None => c.name.clone(),
        }
    }
}
