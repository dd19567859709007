//! Parsing: sqlparser's PostgreSQL dialect plus ebbflow's statements that
//! sqlparser does not know.
//!
//! sqlparser cannot carry new statements through its `Dialect` hook, so
//! [`parse`] drives the `Parser` itself: before each statement it looks at
//! the leading words, parses ours (`FLUSH`, `ALTER ... SET PARALLELISM`,
//! `ALTER FRAGMENT`, `ALTER SYSTEM`, `SHOW CLUSTER|FRAGMENTS|ACTORS`) by hand
//! and hands everything else to `parse_statement()`. Once one of our
//! branches has seen its distinguishing words it commits: later errors talk
//! about our syntax instead of falling back to sqlparser's message.

use ebbflow_common::ErrorKind;
use sqlparser::ast::ObjectNamePart;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{ParallelismSpec, SqlError, SqlResult};

mod create;

/// A parsed statement.
#[derive(Debug, Clone)]
pub enum Statement {
    /// Anything sqlparser parses.
    Sql(Box<sqlparser::ast::Statement>),
    /// `FLUSH`
    Flush,
    /// `ALTER {TABLE | MATERIALIZED VIEW} name SET PARALLELISM {=|TO} {n | ADAPTIVE | 0}`
    AlterRelationParallelism {
        materialized_view: bool,
        name: String,
        parallelism: super::ParallelismSpec,
    },
    /// `ALTER FRAGMENT id SET PARALLELISM {=|TO} {n | ADAPTIVE}`
    AlterFragmentParallelism {
        fragment_id: u32,
        parallelism: super::ParallelismSpec,
    },
    /// `ALTER SYSTEM RESCHEDULE 'plan' [DRY RUN]`
    Reschedule { plan: String, dry_run: bool },
    /// `ALTER SYSTEM RESCHEDULE DRAIN WORKER id [DRY RUN]`
    DrainWorker { worker_id: u32, dry_run: bool },
    /// `ALTER SYSTEM ADD WORKER [WITH (parallel_units = n)]`
    AddWorker { parallel_units: Option<u32> },
    /// `ALTER SYSTEM REMOVE WORKER id`
    RemoveWorker { worker_id: u32 },
    /// `ALTER SYSTEM RESTART WORKER id`: bring a down compute node back.
    RestartWorker { worker_id: u32 },
    /// `ALTER SYSTEM SET name {=|TO} value`
    AlterSystemSet { name: String, value: String },
    /// `SHOW CLUSTER`
    ShowCluster,
    /// `SHOW FRAGMENTS [FOR name]`
    ShowFragments { name: Option<String> },
    /// `SHOW ACTORS [FOR name]`
    ShowActors { name: Option<String> },
    /// `CREATE USER [IF NOT EXISTS] name [[WITH] option ...]`: of the
    /// options only `PASSWORD {'…' | NULL}` matters (`LOGIN`, `SUPERUSER`
    /// and the like are accepted and ignored).
    CreateUser {
        name: String,
        password: Option<String>,
        if_not_exists: bool,
    },
    /// `CREATE SOURCE name (columns) WITH (connector = …)`, parsed as the
    /// `CREATE TABLE` it looks like.
    CreateSource(Box<sqlparser::ast::CreateTable>, Option<WatermarkSpec>),
    /// `CREATE TABLE … APPEND ONLY [WITH (…)]`.
    CreateAppendOnlyTable(Box<sqlparser::ast::CreateTable>, Option<WatermarkSpec>),
    /// `CREATE TABLE … ON CONFLICT … [WITH (…)]`.
    CreateTableOnConflict(Box<sqlparser::ast::CreateTable>, ebbflow_plan::OnConflict),
    /// `CREATE MATERIALIZED VIEW … AS query EMIT ON WINDOW CLOSE`: the
    /// statement without its last four words.
    EmitOnWindowClose(Box<sqlparser::ast::Statement>),
    /// `DROP SOURCE [IF EXISTS] name [CASCADE | RESTRICT]`
    DropSource {
        name: String,
        if_exists: bool,
        cascade: bool,
    },
    /// `ALTER SOURCE name SET PARALLELISM {=|TO} {n | ADAPTIVE}`: the
    /// source fragments of every job reading it.
    AlterSourceParallelism {
        name: String,
        parallelism: super::ParallelismSpec,
    },
    /// `SHOW CREATE {TABLE | MATERIALIZED VIEW | VIEW | SOURCE} name`
    ShowCreate {
        kind: ebbflow_meta::catalog::RelationKind,
        name: String,
    },
}

/// `WATERMARK FOR column AS expr` in the column list of a source or an
/// append-only table.
#[derive(Debug, Clone)]
pub struct WatermarkSpec {
    pub column: sqlparser::ast::Ident,
    pub expr: sqlparser::ast::Expr,
}

/// Split `sql` into statements and parse each.
pub fn parse(sql: &str) -> SqlResult<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(sql)
        .map_err(parser_error)?;
    let mut stmts = Vec::new();
    let mut expecting_delimiter = false;
    loop {
        while parser.consume_token(&Token::SemiColon) {
            expecting_delimiter = false;
        }
        if parser.peek_token_ref().token == Token::EOF {
            break;
        }
        if expecting_delimiter {
            let found = parser.peek_token();
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{}\"",
                found.token
            )));
        }
        let stmt = match parse_ebbflow_statement(&mut parser)? {
            Some(s) => s,
            None => Statement::Sql(Box::new(parser.parse_statement().map_err(parser_error)?)),
        };
        stmts.push(stmt);
        expecting_delimiter = true;
    }
    Ok(stmts)
}

fn parser_error(e: ParserError) -> SqlError {
    let msg = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
        ParserError::RecursionLimitExceeded => "statement is too deeply nested".to_string(),
    };
    SqlError::syntax(msg)
}

/// After `CREATE USER`.
fn parse_create_user(p: &mut Parser) -> SqlResult<Statement> {
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = object_name(p)?;
    let _ = p.parse_keyword(Keyword::WITH);
    let mut password = None;
    loop {
        match peek_word(p, 0).as_deref() {
            Some("PASSWORD") => {
                p.next_token();
                password = match p.next_token().token {
                    Token::SingleQuotedString(s) => Some(s),
                    Token::Word(w) if w.value.eq_ignore_ascii_case("null") => None,
                    other => {
                        return Err(SqlError::syntax(format!(
                            "syntax error at or near \"{other}\""
                        )))
                    }
                };
            }
            Some(
                "LOGIN" | "NOLOGIN" | "SUPERUSER" | "NOSUPERUSER" | "CREATEDB" | "NOCREATEDB"
                | "CREATEROLE" | "NOCREATEROLE" | "INHERIT" | "NOINHERIT",
            ) => {
                p.next_token();
            }
            _ => break,
        }
    }
    Ok(Statement::CreateUser {
        name,
        password,
        if_not_exists,
    })
}

/// The unquoted word `n` tokens ahead, upper-cased (`None` for anything else).
fn peek_word(p: &Parser, n: usize) -> Option<String> {
    match p.peek_nth_token(n).token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

/// Recognise one of our statements at the parser's position. Returns
/// `Ok(None)` (position unchanged) when the statement is not ours.
fn parse_ebbflow_statement(p: &mut Parser) -> SqlResult<Option<Statement>> {
    let w0 = peek_word(p, 0);
    let w1 = peek_word(p, 1);
    match (w0.as_deref(), w1.as_deref()) {
        (Some("FLUSH"), _) => {
            p.next_token();
            Ok(Some(Statement::Flush))
        }
        (Some("SHOW"), Some("CLUSTER")) => {
            p.next_token();
            p.next_token();
            Ok(Some(Statement::ShowCluster))
        }
        (Some("CREATE"), Some("SOURCE" | "TABLE")) => create::parse_create(p),
        (Some("CREATE"), Some("MATERIALIZED")) => create::parse_emit_on_window_close(p),
        (Some("DROP"), Some("SOURCE")) => {
            p.next_token();
            p.next_token();
            create::parse_drop_source(p).map(Some)
        }
        (Some("ALTER"), Some("SOURCE")) => {
            p.next_token();
            p.next_token();
            create::parse_alter_source(p).map(Some)
        }
        (Some("CREATE"), Some("USER")) => {
            p.next_token();
            p.next_token();
            parse_create_user(p).map(Some)
        }
        (Some("SHOW"), Some("CREATE")) => {
            use ebbflow_meta::catalog::RelationKind;
            let (kind, words) = match (peek_word(p, 2).as_deref(), peek_word(p, 3).as_deref()) {
                (Some("TABLE"), _) => (RelationKind::Table, 3),
                (Some("VIEW"), _) => (RelationKind::View, 3),
                (Some("SOURCE"), _) => (RelationKind::Source, 3),
                (Some("MATERIALIZED"), Some("VIEW")) => (RelationKind::MaterializedView, 4),
                // SHOW CREATE FUNCTION and the like: sqlparser's.
                _ => return Ok(None),
            };
            for _ in 0..words {
                p.next_token();
            }
            let name = object_name(p)?;
            Ok(Some(Statement::ShowCreate { kind, name }))
        }
        (Some("SHOW"), Some(w @ ("FRAGMENTS" | "ACTORS"))) => {
            let fragments = w == "FRAGMENTS";
            p.next_token();
            p.next_token();
            let name = if p.parse_keyword(Keyword::FOR) {
                Some(object_name(p)?)
            } else {
                None
            };
            Ok(Some(if fragments {
                Statement::ShowFragments { name }
            } else {
                Statement::ShowActors { name }
            }))
        }
        (Some("ALTER"), Some("SYSTEM")) => {
            p.next_token();
            p.next_token();
            parse_alter_system(p).map(Some)
        }
        (Some("ALTER"), Some("FRAGMENT")) => {
            p.next_token();
            p.next_token();
            let fragment_id = parse_u32(p, "fragment id")?;
            expect_words(p, &["SET", "PARALLELISM"])?;
            let parallelism = parse_parallelism(p, false)?;
            Ok(Some(Statement::AlterFragmentParallelism {
                fragment_id,
                parallelism,
            }))
        }
        (Some("ALTER"), Some("TABLE" | "MATERIALIZED")) => {
            // Only ours if `SET PARALLELISM` follows the name; otherwise
            // rewind and let sqlparser have it.
            let prefix = p
                .maybe_parse(|p| {
                    p.expect_keyword(Keyword::ALTER)?;
                    let mv = if p.parse_keyword(Keyword::TABLE) {
                        false
                    } else {
                        p.expect_keywords(&[Keyword::MATERIALIZED, Keyword::VIEW])?;
                        true
                    };
                    let name = p.parse_object_name(false)?;
                    p.expect_keyword(Keyword::SET)?;
                    if peek_word(p, 0).as_deref() != Some("PARALLELISM") {
                        return p.expected("PARALLELISM", p.peek_token());
                    }
                    p.next_token();
                    Ok((mv, name))
                })
                .map_err(parser_error)?;
            let Some((materialized_view, name)) = prefix else {
                return Ok(None);
            };
            let parallelism = parse_parallelism(p, true)?;
            Ok(Some(Statement::AlterRelationParallelism {
                materialized_view,
                name: object_name_to_string(&name),
                parallelism,
            }))
        }
        _ => Ok(None),
    }
}

/// After `ALTER SYSTEM`.
fn parse_alter_system(p: &mut Parser) -> SqlResult<Statement> {
    match peek_word(p, 0).as_deref() {
        Some("RESCHEDULE") => {
            p.next_token();
            if peek_word(p, 0).as_deref() == Some("DRAIN") {
                p.next_token();
                expect_words(p, &["WORKER"])?;
                let worker_id = parse_u32(p, "worker id")?;
                let dry_run = parse_dry_run(p)?;
                return Ok(Statement::DrainWorker { worker_id, dry_run });
            }
            let plan = match p.next_token().token {
                Token::SingleQuotedString(s) => s,
                other => {
                    return Err(SqlError::syntax(format!(
                        "expected a quoted reschedule plan or DRAIN after ALTER SYSTEM RESCHEDULE, found \"{other}\""
                    )))
                }
            };
            let dry_run = parse_dry_run(p)?;
            Ok(Statement::Reschedule { plan, dry_run })
        }
        Some("ADD") => {
            p.next_token();
            expect_words(p, &["WORKER"])?;
            let mut parallel_units = None;
            if p.parse_keyword(Keyword::WITH) {
                expect_token(p, Token::LParen, "(")?;
                loop {
                    let key = match p.next_token().token {
                        Token::Word(w) => w.value.to_ascii_lowercase(),
                        other => {
                            return Err(SqlError::syntax(format!(
                                "expected an option name, found \"{other}\""
                            )))
                        }
                    };
                    expect_token(p, Token::Eq, "=")?;
                    let value = parse_u32(p, "option value")?;
                    if key != "parallel_units" {
                        return Err(SqlError::syntax(format!(
                            "unknown option \"{key}\" for ALTER SYSTEM ADD WORKER (expected parallel_units)"
                        )));
                    }
                    parallel_units = Some(value);
                    if !p.consume_token(&Token::Comma) {
                        break;
                    }
                }
                expect_token(p, Token::RParen, ")")?;
            }
            Ok(Statement::AddWorker { parallel_units })
        }
        Some("REMOVE") => {
            p.next_token();
            expect_words(p, &["WORKER"])?;
            let worker_id = parse_u32(p, "worker id")?;
            Ok(Statement::RemoveWorker { worker_id })
        }
        Some("RESTART") => {
            p.next_token();
            expect_words(p, &["WORKER"])?;
            let worker_id = parse_u32(p, "worker id")?;
            Ok(Statement::RestartWorker { worker_id })
        }
        Some("SET") => {
            p.next_token();
            let name = match p.next_token().token {
                Token::Word(w) => ident_value(&w.value, w.quote_style),
                other => {
                    return Err(SqlError::syntax(format!(
                        "expected a parameter name after ALTER SYSTEM SET, found \"{other}\""
                    )))
                }
            };
            if !p.consume_token(&Token::Eq) && !p.parse_keyword(Keyword::TO) {
                return Err(SqlError::syntax(format!(
                    "expected = or TO after ALTER SYSTEM SET {name}, found \"{}\"",
                    p.peek_token().token
                )));
            }
            let value = match p.next_token().token {
                Token::SingleQuotedString(s) => s,
                Token::Number(n, _) => n,
                Token::Word(w) => w.value,
                Token::Minus => match p.next_token().token {
                    Token::Number(n, _) => format!("-{n}"),
                    other => {
                        return Err(SqlError::syntax(format!(
                            "expected a value after ALTER SYSTEM SET {name} =, found \"-{other}\""
                        )))
                    }
                },
                other => {
                    return Err(SqlError::syntax(format!(
                        "expected a value after ALTER SYSTEM SET {name} =, found \"{other}\""
                    )))
                }
            };
            Ok(Statement::AlterSystemSet { name, value })
        }
        _ => Err(SqlError::syntax(format!(
            "expected RESCHEDULE, ADD WORKER, REMOVE WORKER, RESTART WORKER or SET after ALTER SYSTEM, found \"{}\"",
            p.peek_token().token
        ))),
    }
}

/// `{= | TO} {n | ADAPTIVE | 0}` after `SET PARALLELISM` (`0` means
/// ADAPTIVE for a table or MV; a fragment takes `n ≥ 1` or ADAPTIVE).
fn parse_parallelism(p: &mut Parser, zero_is_adaptive: bool) -> SqlResult<ParallelismSpec> {
    if !p.consume_token(&Token::Eq) && !p.parse_keyword(Keyword::TO) {
        return Err(SqlError::syntax(format!(
            "expected = or TO after SET PARALLELISM, found \"{}\"",
            p.peek_token().token
        )));
    }
    match p.next_token().token {
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("ADAPTIVE") => {
            Ok(ParallelismSpec::Adaptive)
        }
        Token::Number(n, _) => match n.parse::<u32>() {
            Ok(0) if zero_is_adaptive => Ok(ParallelismSpec::Adaptive),
            Ok(0) => Err(SqlError::new(
                ErrorKind::InvalidParameterValue,
                "parallelism of a fragment must be at least 1 (or ADAPTIVE)",
            )),
            Ok(v) => Ok(ParallelismSpec::Fixed(v)),
            Err(_) => Err(SqlError::new(
                ErrorKind::InvalidParameterValue,
                format!("invalid parallelism \"{n}\": expected a non-negative integer or ADAPTIVE"),
            )),
        },
        Token::Minus => Err(SqlError::new(
            ErrorKind::InvalidParameterValue,
            "parallelism must not be negative (use ADAPTIVE or a positive integer)",
        )),
        other => Err(SqlError::syntax(format!(
            "expected a positive integer, 0 or ADAPTIVE after SET PARALLELISM, found \"{other}\""
        ))),
    }
}

fn parse_dry_run(p: &mut Parser) -> SqlResult<bool> {
    if peek_word(p, 0).as_deref() == Some("DRY") {
        p.next_token();
        expect_words(p, &["RUN"])?;
        Ok(true)
    } else {
        Ok(false)
    }
}

fn parse_u32(p: &mut Parser, what: &str) -> SqlResult<u32> {
    match p.next_token().token {
        Token::Number(n, _) => n
            .parse::<u32>()
            .map_err(|_| SqlError::syntax(format!("invalid {what} \"{n}\""))),
        other => Err(SqlError::syntax(format!(
            "expected {what}, found \"{other}\""
        ))),
    }
}

fn expect_words(p: &mut Parser, words: &[&str]) -> SqlResult<()> {
    for w in words {
        if peek_word(p, 0).as_deref() != Some(*w) {
            return Err(SqlError::syntax(format!(
                "expected {w}, found \"{}\"",
                p.peek_token().token
            )));
        }
        p.next_token();
    }
    Ok(())
}

fn expect_token(p: &mut Parser, t: Token, shown: &str) -> SqlResult<()> {
    if p.consume_token(&t) {
        Ok(())
    } else {
        Err(SqlError::syntax(format!(
            "expected {shown}, found \"{}\"",
            p.peek_token().token
        )))
    }
}

fn object_name(p: &mut Parser) -> SqlResult<String> {
    let name = p.parse_object_name(false).map_err(parser_error)?;
    Ok(object_name_to_string(&name))
}

/// A possibly qualified name as one string: parts normalised like
/// identifiers (unquoted lower-cased) and joined with `.`.
pub fn object_name_to_string(name: &sqlparser::ast::ObjectName) -> String {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(i) => ident_value(&i.value, i.quote_style),
            ObjectNamePart::Function(f) => f.name.value.to_ascii_lowercase(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// PostgreSQL identifier folding: unquoted names are lower-cased.
pub fn ident_value(value: &str, quote_style: Option<char>) -> String {
    if quote_style.is_some() {
        value.to_string()
    } else {
        value.to_lowercase()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::parser) fn one(sql: &str) -> Statement {
        let mut v = parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(v.len(), 1, "{sql}");
        v.remove(0)
    }

    fn err(sql: &str) -> SqlError {
        match parse(sql) {
            Ok(s) => panic!("{sql} parsed: {s:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn flush_and_multiple_statements() {
        let v = parse("FLUSH; select 1;; flush").unwrap();
        assert_eq!(v.len(), 3);
        assert!(matches!(v[0], Statement::Flush));
        assert!(matches!(v[1], Statement::Sql(_)));
        assert!(matches!(v[2], Statement::Flush));
        assert!(parse("").unwrap().is_empty());
        assert!(parse(" ; ").unwrap().is_empty());
        assert_eq!(err("FLUSH now").kind(), ErrorKind::SyntaxError);
    }

    #[test]
    fn alter_parallelism() {
        match one("ALTER MATERIALIZED VIEW Mv SET PARALLELISM = 4") {
            Statement::AlterRelationParallelism {
                materialized_view: true,
                name,
                parallelism: ParallelismSpec::Fixed(4),
            } => assert_eq!(name, "mv"),
            s => panic!("{s:?}"),
        }
        match one("alter table \"T\" set parallelism to adaptive") {
            Statement::AlterRelationParallelism {
                materialized_view: false,
                name,
                parallelism: ParallelismSpec::Adaptive,
            } => assert_eq!(name, "T"),
            s => panic!("{s:?}"),
        }
        assert!(matches!(
            one("ALTER TABLE t SET PARALLELISM TO 0"),
            Statement::AlterRelationParallelism {
                parallelism: ParallelismSpec::Adaptive,
                ..
            }
        ));
        assert!(matches!(
            one("ALTER FRAGMENT 3 SET PARALLELISM = 2"),
            Statement::AlterFragmentParallelism {
                fragment_id: 3,
                parallelism: ParallelismSpec::Fixed(2)
            }
        ));
        let e = err("ALTER TABLE t SET PARALLELISM = banana");
        assert_eq!(e.kind(), ErrorKind::SyntaxError);
        assert!(e.to_string().contains("PARALLELISM"), "{}", e.to_string());
        assert_eq!(
            err("ALTER TABLE t SET PARALLELISM 3").kind(),
            ErrorKind::SyntaxError
        );
        assert_eq!(
            err("ALTER FRAGMENT x SET PARALLELISM = 2").kind(),
            ErrorKind::SyntaxError
        );
        // Other ALTER TABLE forms still go to sqlparser.
        assert!(matches!(
            one("ALTER TABLE t ADD COLUMN x int"),
            Statement::Sql(_)
        ));
    }

    #[test]
    fn alter_system() {
        assert!(matches!(
            one("ALTER SYSTEM RESCHEDULE '3-[1,2]+[5]' DRY RUN"),
            Statement::Reschedule { ref plan, dry_run: true } if plan == "3-[1,2]+[5]"
        ));
        assert!(matches!(
            one("alter system reschedule '1+[2]'"),
            Statement::Reschedule { dry_run: false, .. }
        ));
        assert!(matches!(
            one("ALTER SYSTEM RESCHEDULE DRAIN WORKER 2"),
            Statement::DrainWorker {
                worker_id: 2,
                dry_run: false
            }
        ));
        assert!(matches!(
            one("ALTER SYSTEM RESCHEDULE DRAIN WORKER 2 DRY RUN"),
            Statement::DrainWorker {
                worker_id: 2,
                dry_run: true
            }
        ));
        assert!(matches!(
            one("ALTER SYSTEM ADD WORKER"),
            Statement::AddWorker {
                parallel_units: None
            }
        ));
        assert!(matches!(
            one("ALTER SYSTEM ADD WORKER WITH (parallel_units = 4)"),
            Statement::AddWorker {
                parallel_units: Some(4)
            }
        ));
        assert!(matches!(
            one("ALTER SYSTEM REMOVE WORKER 3"),
            Statement::RemoveWorker { worker_id: 3 }
        ));
        assert!(matches!(
            one("alter system restart worker 2"),
            Statement::RestartWorker { worker_id: 2 }
        ));
        assert!(matches!(
            one("ALTER SYSTEM SET barrier_interval_ms = 100"),
            Statement::AlterSystemSet { ref name, ref value } if name == "barrier_interval_ms" && value == "100"
        ));
        assert!(matches!(
            one("ALTER SYSTEM SET x TO 'on'"),
            Statement::AlterSystemSet { ref value, .. } if value == "on"
        ));
        for bad in [
            "ALTER SYSTEM",
            "ALTER SYSTEM RESCHEDULE",
            "ALTER SYSTEM RESCHEDULE 3",
            "ALTER SYSTEM RESCHEDULE '1+[2]' DRY",
            "ALTER SYSTEM ADD WORKER WITH (foo = 1)",
            "ALTER SYSTEM REMOVE WORKER",
            "ALTER SYSTEM SET x",
            "ALTER SYSTEM FROBNICATE",
        ] {
            assert_eq!(err(bad).kind(), ErrorKind::SyntaxError, "{bad}");
        }
    }

    #[test]
    fn show_cluster_objects() {
        assert!(matches!(one("SHOW CLUSTER"), Statement::ShowCluster));
        assert!(matches!(
            one("show fragments"),
            Statement::ShowFragments { name: None }
        ));
        assert!(matches!(
            one("SHOW FRAGMENTS FOR Mv1"),
            Statement::ShowFragments { name: Some(ref n) } if n == "mv1"
        ));
        assert!(matches!(
            one("SHOW ACTORS FOR m"),
            Statement::ShowActors { name: Some(_) }
        ));
        assert!(matches!(one("SHOW x"), Statement::Sql(_)));
    }

    #[test]
    fn sqlparser_statements_we_rely_on() {
        use sqlparser::ast::Statement as S;
        let sql = |s: &str| match one(s) {
            Statement::Sql(b) => *b,
            other => panic!("{s}: {other:?}"),
        };
        assert!(matches!(
            sql("CREATE MATERIALIZED VIEW v WITH (parallelism = 2) AS SELECT 1"),
            S::CreateView(_)
        ));
        assert!(matches!(
            sql("CREATE TABLE t (a int) WITH (connector='datagen', rows_per_second=10)"),
            S::CreateTable(_)
        ));
        assert!(matches!(
            sql("EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT 1"),
            S::Explain { .. }
        ));
        assert!(matches!(sql("SHOW TABLES"), S::ShowTables { .. }));
        assert!(matches!(
            sql("SHOW MATERIALIZED VIEWS"),
            S::ShowViews {
                materialized: true,
                ..
            }
        ));
        assert!(matches!(sql("DESCRIBE t"), S::ExplainTable { .. }));
        assert!(matches!(sql("SET x TO y"), S::Set(_)));
        assert!(matches!(sql("SHOW x"), S::ShowVariable { .. }));
        assert!(matches!(sql("SHOW ALL"), S::ShowVariable { .. }));
        assert!(matches!(sql("BEGIN"), S::StartTransaction { .. }));
        assert!(matches!(
            sql("START TRANSACTION"),
            S::StartTransaction { .. }
        ));
        assert!(matches!(sql("COMMIT"), S::Commit { .. }));
        assert!(matches!(sql("ROLLBACK"), S::Rollback { .. }));
        assert_eq!(err("SELEC 1").kind(), ErrorKind::SyntaxError);
        assert_eq!(err("SELECT 1 2").kind(), ErrorKind::SyntaxError);
    }
}
