//! The shape of psql's aligned output, and the known differences between
//! ebbflow's and PostgreSQL 15's for the same schema.
//!
//! A shape is the title, the column headers, the rows (cells trimmed) and
//! the footer lines (`Indexes:`, `View definition:`, `Access method:`).
//! Two shapes match when all four are equal once [`KNOWN_DIFFERENCES`]
//! are applied: that list is the one place where a difference is accepted,
//! each with its reason.

/// What one psql command printed, parsed.
#[derive(Debug, Default, PartialEq)]
pub struct Shape {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub footer: Vec<String>,
}

/// A difference accepted between ebbflow and PostgreSQL.
pub enum Difference {
    /// The values of this column are not compared.
    IgnoreColumn(&'static str),
    /// Only rows whose `column` is `value` are compared (PostgreSQL lists
    /// objects ebbflow has no counterpart of, or the reverse).
    OnlyRowsWhere {
        column: &'static str,
        value: &'static str,
    },
    /// Rows whose `column` is `value` are not compared.
    IgnoreRowsWhere {
        column: &'static str,
        value: &'static str,
    },
    /// The footer lines after this heading are not compared (the heading
    /// itself still must be there).
    IgnoreFooterAfter(&'static str),
}

/// The accepted differences: `(command, difference, reason)`, where the
/// command is a psql meta-command as run, or `*` for all.
pub const KNOWN_DIFFERENCES: &[(&str, Difference, &str)] = &[
    (
        r"\dn",
        Difference::IgnoreColumn("Owner"),
        "PostgreSQL 15's public schema belongs to the pg_database_owner role; \
         ebbflow has one role (root) owning everything",
    ),
    (
        r"\dn",
        Difference::IgnoreRowsWhere {
            column: "Name",
            value: "rw_catalog",
        },
        "rw_catalog is ebbflow's own system schema (cluster, fragments, actors); \
         psql hides only pg_* and information_schema",
    ),
    (
        r"\l",
        Difference::OnlyRowsWhere {
            column: "Name",
            value: "dev",
        },
        "ebbflow has one database (dev); PostgreSQL also lists postgres, \
         template0 and template1",
    ),
    (
        "*",
        Difference::IgnoreColumn("Size"),
        "ebbflow keeps state in its own LSM store, not one file per relation: \
         pg_table_size is NULL, PostgreSQL prints bytes",
    ),
    (
        "*",
        Difference::IgnoreFooterAfter("View definition:"),
        "ebbflow shows the query as it was written (normalised by its parser); \
         PostgreSQL deparses its rewritten query tree (qualified columns, \
         one select item per line)",
    ),
];

impl Shape {
    /// Parse psql's aligned output of one command (`-P pager=off`).
    pub fn parse(text: &str) -> Shape {
        let lines: Vec<&str> = text.lines().collect();
        let mut shape = Shape::default();
        let Some(sep) = lines.iter().position(|l| is_separator(l)) else {
            // No table: a message such as "Did not find any relations."
            shape.footer = lines
                .iter()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect();
            return shape;
        };
        shape.title = lines[..sep.saturating_sub(1)]
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if sep >= 1 {
            shape.header = cells(lines[sep - 1]);
        }
        let mut i = sep + 1;
        while i < lines.len() && lines[i].contains('|') {
            shape.rows.push(cells(lines[i]));
            i += 1;
        }
        shape.footer = lines[i..]
            .iter()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty() && !is_row_count(l))
            .collect();
        shape
    }

    /// This shape with the known differences for `command` applied.
    pub fn normalized(&self, command: &str) -> Shape {
        let col = |name: &str| self.header.iter().position(|h| h == name);
        let mut rows: Vec<Vec<String>> = self.rows.clone();
        let mut footer = self.footer.clone();
        for (cmd, diff, _) in KNOWN_DIFFERENCES {
            if *cmd != "*" && *cmd != command {
                continue;
            }
            match diff {
                Difference::IgnoreColumn(c) => {
                    if let Some(i) = col(c) {
                        for r in &mut rows {
                            if let Some(v) = r.get_mut(i) {
                                *v = "~".into();
                            }
                        }
                    }
                }
                Difference::OnlyRowsWhere { column, value } => {
                    if let Some(i) = col(column) {
                        rows.retain(|r| r.get(i).is_some_and(|v| v == value));
                    }
                }
                Difference::IgnoreRowsWhere { column, value } => {
                    if let Some(i) = col(column) {
                        rows.retain(|r| r.get(i).is_none_or(|v| v != value));
                    }
                }
                Difference::IgnoreFooterAfter(heading) => {
                    if let Some(at) = footer.iter().position(|l| l == heading) {
                        // Up to the next section ("Access method: …").
                        let end = footer[at + 1..]
                            .iter()
                            .position(|l| l.ends_with(':') || l.starts_with("Access method:"))
                            .map_or(footer.len(), |e| at + 1 + e);
                        footer.drain(at + 1..end);
                    }
                }
            }
        }
        rows.sort();
        Shape {
            title: self.title.clone(),
            header: self.header.clone(),
            rows,
            footer,
        }
    }
}

fn is_separator(line: &str) -> bool {
    !line.is_empty() && line.chars().all(|c| c == '-' || c == '+')
}

fn is_row_count(line: &str) -> bool {
    line.starts_with('(') && (line.ends_with(" rows)") || line.ends_with(" row)"))
}

fn cells(line: &str) -> Vec<String> {
    line.split('|').map(|c| c.trim().to_string()).collect()
}
