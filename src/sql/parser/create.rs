//! Our forms of CREATE and DROP around sqlparser's `CREATE TABLE`:
//! `CREATE SOURCE name (columns) WITH (...)`, `CREATE TABLE … APPEND ONLY`,
//! `CREATE TABLE … ON CONFLICT …`, `DROP SOURCE` and `ALTER SOURCE … SET
//! PARALLELISM`.
//!
//! A source's column list and options have a table's syntax, and `APPEND
//! ONLY` and `ON CONFLICT` sit where sqlparser does not expect them, so all
//! are parsed by sqlparser's own `CREATE TABLE` over the statement's tokens
//! rewritten (`SOURCE` → `TABLE`, `APPEND ONLY` and `ON CONFLICT …` taken
//! out).

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::{object_name, parse_parallelism, parser_error, peek_word, Statement};
use crate::sql::{SqlError, SqlResult};
use crate::stream::executor::materialize::OnConflict;

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

/// At `CREATE SOURCE` or `CREATE TABLE`: ours if a source, `APPEND ONLY`
/// or `ON CONFLICT`; otherwise `Ok(None)` with the position unchanged.
pub(super) fn parse_create(p: &mut Parser) -> SqlResult<Option<Statement>> {
    let tokens = statement_tokens(p);
    let source = tokens.get(1).is_some_and(|t| is_word(t, "SOURCE"));
    let append = append_only_at(&tokens);
    let conflict = on_conflict_at(&tokens)?;
    if !source && append.is_none() && conflict.is_none() {
        return Ok(None);
    }
    if conflict.is_some() && (source || append.is_some()) {
        return Err(SqlError::new(
            "0A000",
            "ON CONFLICT is only supported on a table with a primary key",
        ));
    }
    let mut rewritten = tokens.clone();
    if let Some(i) = append {
        rewritten.drain(i..i + 2);
    }
    if let Some((i, len, _)) = conflict {
        rewritten.drain(i..i + len);
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
        Statement::CreateSource(Box::new(table))
    } else if let Some((_, _, on_conflict)) = conflict {
        Statement::CreateTableOnConflict(Box::new(table), on_conflict)
    } else {
        Statement::CreateAppendOnlyTable(Box::new(table))
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
    fn sources_and_append_only_tables() {
        let Statement::CreateSource(t) = one(
            "CREATE SOURCE IF NOT EXISTS s (a int, b varchar) WITH (connector = 'nexmark', nexmark.table.type = 'Bid')",
        ) else {
            panic!()
        };
        assert!(t.if_not_exists);
        assert_eq!(t.columns.len(), 2);
        let Statement::CreateAppendOnlyTable(t) =
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
                .code,
            "42601"
        );
        assert_eq!(
            parse("CREATE TABLE t (a int) APPEND ONLY ON CONFLICT IGNORE")
                .unwrap_err()
                .code,
            "0A000"
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
            parse("CREATE SOURCE s (a int) WITH (").unwrap_err().code,
            "42601"
        );
    }
}
