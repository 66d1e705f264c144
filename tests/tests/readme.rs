//! The README quotes the examples: every `examples/FILE.rs:LINE` it names must be the line of
//! what it shows there — the statement a `why` step quotes below the step, the label of a mark
//! — so that an edit of an example cannot leave the walk-through pointing at other lines.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the workspace")
        .to_owned()
}

/// A place in an example the README names: `examples/FILE.rs:LINE`, on README line `at`.
#[derive(Debug)]
struct Reference {
    at: usize,
    file: String,
    line: usize,
    /// The statement a `why` step quotes on the README line below it.
    statement: Option<String>,
    /// The label of the mark the README line shows.
    mark: Option<String>,
}

/// Every `examples/FILE.rs:LINE` of `readme`, with what it quotes there.
fn references(readme: &str) -> Vec<Reference> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut found = Vec::new();
    for (i, text) in lines.iter().enumerate() {
        let mut rest = *text;
        while let Some(start) = rest.find("examples/") {
            let before = &rest[..start];
            rest = &rest[start + "examples/".len()..];
            let file: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let Some(after) = rest[file.len()..].strip_prefix(".rs:") else {
                continue;
            };
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            let Ok(line) = digits.parse() else {
                continue;
            };
            // A `why` step names its place in parentheses and quotes its statement below.
            let statement = before
                .ends_with('(')
                .then(|| lines.get(i + 1).and_then(|next| quoted_statement(next)))
                .flatten();
            // A halted replay shows a mark as `mark LABEL = VALUE`.
            let mark = text
                .split_once("mark ")
                .and_then(|(_, m)| m.split_once(" = "))
                .map(|(label, _)| label)
                .filter(|label| {
                    label
                        .chars()
                        .all(|c| c.is_alphanumeric() || "_-".contains(c))
                })
                .map(str::to_owned);
            found.push(Reference {
                at: i + 1,
                file: format!("{file}.rs"),
                line,
                statement,
                mark,
            });
        }
    }
    found
}

/// The statement a line of a `why` tree quotes, if it quotes one: what follows the tree's
/// bars, unless that is the next step, a note or an elision.
fn quoted_statement(line: &str) -> Option<String> {
    let text = line.trim_start_matches([' ', '│']);
    let not_a_statement = ["├─", "└─", "[", "⋮", "…", "$", "```"];
    (!text.is_empty() && !not_a_statement.iter().any(|p| text.starts_with(p)))
        .then(|| text.to_owned())
}

/// Code without what its layout adds: whitespace, and the trailing commas of lists broken
/// over lines.
fn tokens_only(text: &str) -> String {
    let dense: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    dense
        .iter()
        .enumerate()
        .filter(|&(i, c)| !(*c == ',' && matches!(dense.get(i + 1), Some(')' | ']' | '}'))))
        .map(|(_, c)| *c)
        .collect()
}

/// Whether the source from `line` on starts with `statement` (statements are quoted on one
/// line, whatever lines they span).
fn starts_with_statement(source: &str, line: usize, statement: &str) -> bool {
    let from: Vec<&str> = source.lines().skip(line - 1).collect();
    tokens_only(&from.join("\n")).starts_with(&tokens_only(statement))
}

#[test]
fn every_example_line_the_readme_names_holds_what_it_quotes_there() {
    let root = workspace();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let references = references(&readme);
    assert!(
        references.iter().any(|r| r.statement.is_some())
            && references.iter().any(|r| r.mark.is_some()),
        "the README's walk-through quotes the examples: {references:#?}"
    );
    let mut wrong = Vec::new();
    for r in &references {
        let path = root.join("examples").join(&r.file);
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("README.md:{} names {}: {e}", r.at, path.display()));
        let Some(at) = source
            .lines()
            .nth(r.line.saturating_sub(1))
            .filter(|_| r.line > 0)
        else {
            wrong.push(format!(
                "README.md:{} names examples/{}:{}, which has {} lines",
                r.at,
                r.file,
                r.line,
                source.lines().count()
            ));
            continue;
        };
        if let Some(statement) = &r.statement
            && !starts_with_statement(&source, r.line, statement)
        {
            wrong.push(format!(
                "README.md:{} quotes `{statement}` at examples/{}:{}, which is `{}`",
                r.at,
                r.file,
                r.line,
                at.trim()
            ));
        }
        if let Some(mark) = &r.mark
            && !at.contains(&format!("mark!(\"{mark}\""))
        {
            wrong.push(format!(
                "README.md:{} shows mark {mark} at examples/{}:{}, which is `{}`",
                r.at,
                r.file,
                r.line,
                at.trim()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_reference_past_its_statement_is_found_wrong() {
    let source = "fn f() {\n    let x = g(\n        1,\n    );\n    x\n}\n";
    assert!(starts_with_statement(source, 2, "let x = g(1);"));
    assert!(!starts_with_statement(source, 3, "let x = g(1);"));
    let readme = "newer = false  (examples/kvstore.rs:105, backup/replication)\n\
                  │   let newer = version.as_str() > current;\n\
                  ├─ data: current = \"9\"  (examples/kvstore.rs:103)\n\
                  ⋮\n\
                  \x20   at       mark ignored = \"put\" at examples/kvstore.rs:110\n";
    let found = references(readme);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert_eq!(
        found[0].statement.as_deref(),
        Some("let newer = version.as_str() > current;")
    );
    assert_eq!((found[0].line, found[0].mark.as_deref()), (105, None));
    assert_eq!(found[1].statement, None, "an elision quotes nothing");
    assert_eq!(
        (found[2].line, found[2].mark.as_deref()),
        (110, Some("ignored"))
    );
    assert_eq!(
        found[2].statement, None,
        "a replay's line quotes no statement"
    );
}
