//! Our forms of CREATE and DROP around sqlparser's `CREATE TABLE`:
//! `CREATE SOURCE name (columns) WITH (...)`, `CREATE TABLE … APPEND ONLY`,
//! `CREATE TABLE … ON CONFLICT …`, `WATERMARK FOR` in the column list of
//! either, `CREATE MATERIALIZED VIEW … EMIT ON WINDOW CLOSE`, `DROP SOURCE`
//! and `ALTER SOURCE … SET PARALLELISM`.
//!
//! A source's column list and options have a table's syntax, and `APPEND
//! ONLY`, `ON CONFLICT` and `WATERMARK FOR` sit where sqlparser does not
//! expect them, so all are parsed by sqlparser's own `CREATE TABLE` over
//! the statement's tokens rewritten (`SOURCE` → `TABLE`, `APPEND ONLY`,
//! `ON CONFLICT …` and `WATERMARK FOR …` taken out).

use ebbflow_common::ErrorKind;
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::{object_name, parse_parallelism, parser_error, peek_word, Statement, WatermarkSpec};
use crate::{SqlError, SqlResult};
use ebbflow_plan::OnConflict;

/// The tokens of the statement at the parser's position, up to the `;`
/// that ends it (not consumed).
fn statement_tokens(p: &Parser) -> Vec<TokenWithSpan> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    loop {
        let t = p.peek_nth_token(out.len());
        match &t.token {
            Token::EOF => break,
            Token::SemiColon if depth <= 0 => break,
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        out.push(t);
    }
    out
}

fn is_word(t: &TokenWithSpan, w: &str) -> bool {
    matches!(&t.token, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
}

/// Where `APPEND ONLY` stands outside parentheses, if it does.
fn append_only_at(tokens: &[TokenWithSpan]) -> Option<usize> {
    let mut depth = 0i32;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 0
                && is_word(t, "APPEND")
                && tokens.get(i + 1).is_some_and(|n| is_word(n, "ONLY")) =>
            {
                return Some(i)
            }
            _ => {}
        }
    }
    None
}

/// Where RisingWave's `ON CONFLICT {OVERWRITE | IGNORE | DO NOTHING | DO
/// UPDATE FULL | DO UPDATE IF NOT NULL}` stands outside parentheses, if it
/// does: its first token, its length and the behaviour it names.
fn on_conflict_at(tokens: &[TokenWithSpan]) -> SqlResult<Option<(usize, usize, OnConflict)>> {
    let mut depth = 0i32;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 0
                && is_word(t, "ON")
                && tokens.get(i + 1).is_some_and(|n| is_word(n, "CONFLICT")) =>
            {
                let words = |ws: &[&str]| {
                    ws.iter()
                        .enumerate()
                        .all(|(k, w)| tokens.get(i + 2 + k).is_some_and(|t| is_word(t, w)))
                };
                let (len, behaviour) = if words(&["OVERWRITE"]) {
                    (1, OnConflict::Overwrite)
                } else if words(&["IGNORE"]) {
                    (1, OnConflict::Ignore)
                } else if words(&["DO", "NOTHING"]) {
                    (2, OnConflict::Ignore)
                } else if words(&["DO", "UPDATE", "FULL"]) {
                    (3, OnConflict::Overwrite)
                } else if words(&["DO", "UPDATE", "IF", "NOT", "NULL"]) {
                    (5, OnConflict::DoUpdateIfNotNull)
                } else {
                    return Err(SqlError::syntax(format!(
                        "expected OVERWRITE, IGNORE, DO NOTHING, DO UPDATE FULL or DO UPDATE IF NOT NULL after ON CONFLICT, found \"{}\"",
                        tokens.get(i + 2).map_or(Token::EOF, |t| t.token.clone())
                    )));
                };
                return Ok(Some((i, 2 + len, behaviour)));
            }
            _ => {}
        }
    }
    Ok(None)
}

/// Where `WATERMARK FOR` stands in the column list, if it does.
fn watermark_at(tokens: &[TokenWithSpan]) -> Option<usize> {
    let mut depth = 0i32;
    for (i, t) in tokens.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 1
                && is_word(t, "WATERMARK")
                && tokens.get(i + 1).is_some_and(|n| is_word(n, "FOR")) =>
            {
                return Some(i)
            }
            _ => {}
        }
    }
    None
}

/// Take `WATERMARK FOR col AS expr` (found at `start`) and the comma that
/// separates it out of the column list, and parse it.
fn take_watermark(tokens: &mut Vec<TokenWithSpan>, start: usize) -> SqlResult<WatermarkSpec> {
    let mut depth = 0i32;
    let mut end = tokens.len();
    for (i, t) in tokens.iter().enumerate().skip(start) {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => {
                end = i;
                break;
            }
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let mut spec: Vec<TokenWithSpan> = tokens[start..end].to_vec();
    let before_is_comma = start > 0 && tokens[start - 1].token == Token::Comma;
    let after_is_comma = tokens.get(end).is_some_and(|t| t.token == Token::Comma);
    match (before_is_comma, after_is_comma) {
        (true, _) => drop(tokens.drain(start - 1..end)),
        (false, true) => drop(tokens.drain(start..=end)),
        (false, false) => drop(tokens.drain(start..end)),
    }
    spec.push(TokenWithSpan::wrap(Token::EOF));
    let dialect = PostgreSqlDialect {};
    let mut sub = Parser::new(&dialect).with_tokens_with_locations(spec);
    sub.next_token(); // WATERMARK
    sub.next_token(); // FOR
    let column = sub.parse_identifier().map_err(parser_error)?;
    sub.expect_keyword(Keyword::AS).map_err(parser_error)?;
    let expr = sub.parse_expr().map_err(parser_error)?;
    if sub.peek_token_ref().token != Token::EOF {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            sub.peek_token().token
        )));
    }
    Ok(WatermarkSpec { column, expr })
}

/// At `CREATE MATERIALIZED`: ours if the statement ends in `EMIT ON
/// WINDOW CLOSE`; otherwise `Ok(None)` with the position unchanged.
pub(super) fn parse_emit_on_window_close(p: &mut Parser) -> SqlResult<Option<Statement>> {
    let tokens = statement_tokens(p);
    let n = tokens.len();
    let tail = ["EMIT", "ON", "WINDOW", "CLOSE"];
    let emit_at = |i: usize| {
        tokens
            .get(i..i + 4)
            .is_some_and(|w| w.iter().zip(tail).all(|(t, w)| is_word(t, w)))
    };
    // After the query, or (RisingWave's form) just before `AS`.
    let at = if n >= 4 && emit_at(n - 4) {
        n - 4
    } else {
        match (0..n).find(|&i| emit_at(i) && tokens.get(i + 4).is_some_and(|t| is_word(t, "AS"))) {
            Some(i) => i,
            None => return Ok(None),
        }
    };
    let mut rewritten = tokens.clone();
    rewritten.drain(at..at + 4);
    rewritten.push(TokenWithSpan::wrap(Token::EOF));
    let dialect = PostgreSqlDialect {};
    let mut sub = Parser::new(&dialect).with_tokens_with_locations(rewritten);
    let stmt = sub.parse_statement().map_err(parser_error)?;
    for _ in 0..n {
        p.next_token();
    }
    Ok(Some(Statement::EmitOnWindowClose(Box::new(stmt))))
}

/// At `CREATE SOURCE` or `CREATE TABLE`: ours if a source or `APPEND
/// ONLY`; otherwise `Ok(None)` with the position unchanged.
pub(super) fn parse_create(p: &mut Parser) -> SqlResult<Option<Statement>> {
    let tokens = statement_tokens(p);
    let source = tokens.get(1).is_some_and(|t| is_word(t, "SOURCE"));
    let append = append_only_at(&tokens);
    let watermark_start = watermark_at(&tokens);
    let conflict = on_conflict_at(&tokens)?;
    if !source && append.is_none() {
        if watermark_start.is_some() {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "WATERMARK is only supported on sources and APPEND ONLY tables",
            ));
        }
        if conflict.is_none() {
            return Ok(None);
        }
    }
    if conflict.is_some() && (source || append.is_some()) {
        return Err(SqlError::new(
            ErrorKind::FeatureNotSupported,
            "ON CONFLICT is only supported on a table with a primary key",
        ));
    }
    let mut rewritten = tokens.clone();
    if let Some((i, len, _)) = conflict {
        rewritten.drain(i..i + len);
    }
    let watermark = match watermark_start {
        Some(start) => Some(take_watermark(&mut rewritten, start)?),
        None => None,
    };
    let append = append_only_at(&rewritten);
    if let Some(i) = append {
        rewritten.drain(i..i + 2);
    }
    if source {
        rewritten[1].token = Token::make_keyword("TABLE");
    }
    rewritten.push(TokenWithSpan::wrap(Token::EOF));
    let dialect = PostgreSqlDialect {};
    let mut sub = Parser::new(&dialect).with_tokens_with_locations(rewritten);
    let stmt = sub.parse_statement().map_err(parser_error)?;
    let ast::Statement::CreateTable(table) = stmt else {
        return Err(SqlError::syntax("expected CREATE TABLE or CREATE SOURCE"));
    };
    if table.query.is_some() {
        return Err(SqlError::unsupported(if source {
            "CREATE SOURCE AS"
        } else {
            "CREATE TABLE AS"
        }));
    }
    for _ in 0..tokens.len() {
        p.next_token();
    }
    Ok(Some(if source {
        Statement::CreateSource(Box::new(table), watermark)
    } else if let Some((_, _, on_conflict)) = conflict {
        Statement::CreateTableOnConflict(Box::new(table), on_conflict)
    } else {
        Statement::CreateAppendOnlyTable(Box::new(table), watermark)
    }))
}

/// After `DROP SOURCE`.
pub(super) fn parse_drop_source(p: &mut Parser) -> SqlResult<Statement> {
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = object_name(p)?;
    let cascade = match peek_word(p, 0).as_deref() {
        Some("CASCADE") => {
            p.next_token();
            true
        }
        Some("RESTRICT") => {
            p.next_token();
            false
        }
        _ => false,
    };
    Ok(Statement::DropSource {
        name,
        if_exists,
        cascade,
    })
}

/// After `ALTER SOURCE`.
pub(super) fn parse_alter_source(p: &mut Parser) -> SqlResult<Statement> {
    let name = object_name(p)?;
    super::expect_words(p, &["SET", "PARALLELISM"])?;
    let parallelism = parse_parallelism(p, false)?;
    Ok(Statement::AlterSourceParallelism { name, parallelism })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::super::tests::one;
    use super::*;

    #[test]
    fn watermarks_and_emit_on_window_close() {
        for sql in [
            "CREATE SOURCE s (a int, t timestamp, WATERMARK FOR t AS t - INTERVAL '5' SECOND) WITH (connector = 'nexmark')",
            "CREATE SOURCE s (WATERMARK FOR t AS t - INTERVAL '5' SECOND, a int, t timestamp) WITH (connector = 'nexmark')",
            "CREATE TABLE s (a int, t timestamp, WATERMARK FOR t AS t) APPEND ONLY",
        ] {
            let (Statement::CreateSource(t, Some(w)) | Statement::CreateAppendOnlyTable(t, Some(w))) =
                one(sql)
            else {
                panic!("{sql}")
            };
            assert_eq!(t.columns.len(), 2, "{sql}");
            assert_eq!(w.column.value, "t");
        }
        let err = parse("CREATE TABLE s (a int, t timestamp, WATERMARK FOR t AS t)").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FeatureNotSupported);
        let Statement::EmitOnWindowClose(stmt) =
            one("CREATE MATERIALIZED VIEW m AS SELECT 1 FROM t GROUP BY a EMIT ON WINDOW CLOSE")
        else {
            panic!()
        };
        assert!(matches!(
            *stmt,
            sqlparser::ast::Statement::CreateView { .. }
        ));
        // RisingWave's form, the clause before AS.
        let Statement::EmitOnWindowClose(stmt) =
            one("CREATE MATERIALIZED VIEW m EMIT ON WINDOW CLOSE AS SELECT 1 FROM t GROUP BY a")
        else {
            panic!()
        };
        assert!(matches!(
            *stmt,
            sqlparser::ast::Statement::CreateView { .. }
        ));
        assert!(matches!(
            one("CREATE MATERIALIZED VIEW m AS SELECT 1"),
            Statement::Sql(_)
        ));
    }

    #[test]
    fn sources_and_append_only_tables() {
        let Statement::CreateSource(t, None) = one(
            "CREATE SOURCE IF NOT EXISTS s (a int, b varchar) WITH (connector = 'nexmark', nexmark.table.type = 'Bid')",
        ) else {
            panic!()
        };
        assert!(t.if_not_exists);
        assert_eq!(t.columns.len(), 2);
        let Statement::CreateAppendOnlyTable(t, None) =
            one("CREATE TABLE t (a int, b int) APPEND ONLY WITH (x = 1)")
        else {
            panic!()
        };
        assert_eq!(t.columns.len(), 2);
        assert!(matches!(one("CREATE TABLE t (a int)"), Statement::Sql(_)));
        // a column named append is not the clause
        assert!(matches!(
            one("CREATE TABLE t (append int, only int)"),
            Statement::Sql(_)
        ));
        for (sql, want) in [
            (
                "CREATE TABLE t (a int PRIMARY KEY) ON CONFLICT IGNORE",
                OnConflict::Ignore,
            ),
            (
                "CREATE TABLE t (a int PRIMARY KEY) on conflict do nothing",
                OnConflict::Ignore,
            ),
            (
                "CREATE TABLE t (a int, PRIMARY KEY (a)) ON CONFLICT OVERWRITE WITH (x = 1)",
                OnConflict::Overwrite,
            ),
            (
                "CREATE TABLE t (a int PRIMARY KEY) ON CONFLICT DO UPDATE FULL",
                OnConflict::Overwrite,
            ),
            (
                "CREATE TABLE t (a int PRIMARY KEY, b int) ON CONFLICT DO UPDATE IF NOT NULL",
                OnConflict::DoUpdateIfNotNull,
            ),
        ] {
            let Statement::CreateTableOnConflict(t, got) = one(sql) else {
                panic!("{sql}")
            };
            assert_eq!(got, want, "{sql}");
            assert_eq!(t.columns.len(), if sql.contains(" b ") { 2 } else { 1 });
        }
        assert_eq!(
            parse("CREATE TABLE t (a int PRIMARY KEY) ON CONFLICT DO UPDATE")
                .unwrap_err()
                .kind(),
            ErrorKind::SyntaxError
        );
        assert_eq!(
            parse("CREATE TABLE t (a int) APPEND ONLY ON CONFLICT IGNORE")
                .unwrap_err()
                .kind(),
            ErrorKind::FeatureNotSupported
        );
        let v = parse("CREATE SOURCE s (a int); SELECT 1").unwrap();
        assert_eq!(v.len(), 2);
        assert!(matches!(
            one("DROP SOURCE IF EXISTS s CASCADE"),
            Statement::DropSource {
                if_exists: true,
                cascade: true,
                ..
            }
        ));
        assert!(matches!(
            one("ALTER SOURCE s SET PARALLELISM = 3"),
            Statement::AlterSourceParallelism { .. }
        ));
        assert_eq!(
            parse("CREATE SOURCE s (a int) WITH (").unwrap_err().kind(),
            ErrorKind::SyntaxError
        );
    }
}
