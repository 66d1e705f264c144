//! Putting attributes into a source text without moving any line: each goes in front of the
//! item's first token, on that token's line, so every statement keeps the `file:line` the user
//! wrote (columns move on the `fn` line only).

use proc_macro2::LineColumn;

/// An attribute to put in front of the token at `at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insertion {
    /// Where the item's first token starts (line from 1, column in characters from 0).
    pub at: LineColumn,
    /// The attribute, e.g. `#[::ppd::eblock(auto)]`.
    pub attribute: &'static str,
}

/// `text` with every insertion made, each followed by a space.
pub fn apply(text: &str, insertions: &[Insertion]) -> String {
    let mut offsets: Vec<(usize, &str)> = insertions
        .iter()
        .filter_map(|i| byte_offset(text, i.at).map(|offset| (offset, i.attribute)))
        .collect();
    offsets.sort_by_key(|&(offset, _)| offset);
    let mut out = String::with_capacity(text.len() + offsets.len() * 32);
    let mut done = 0;
    for (offset, attribute) in offsets {
        out.push_str(&text[done..offset]);
        out.push_str(attribute);
        out.push(' ');
        done = offset;
    }
    out.push_str(&text[done..]);
    out
}

/// The byte offset of a line and character column, if the text has it.
fn byte_offset(text: &str, at: LineColumn) -> Option<usize> {
    let line_start = if at.line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(at.line - 2)?.0 + 1
    };
    let line = &text[line_start..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    let within = match line.char_indices().nth(at.column) {
        Some((byte, _)) => byte,
        None if line.chars().count() == at.column => line.len(),
        None => return None,
    };
    Some(line_start + within)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: usize, column: usize) -> LineColumn {
        LineColumn { line, column }
    }

    #[test]
    fn attributes_go_in_front_of_their_tokens_and_no_line_moves() {
        let text = "/// Doc.\nfn a() {}\n    pub fn é() { let ü = 1; }\n";
        let out = apply(
            text,
            &[
                Insertion {
                    at: at(3, 4),
                    attribute: "#[y]",
                },
                Insertion {
                    at: at(2, 0),
                    attribute: "#[x]",
                },
            ],
        );
        assert_eq!(
            out,
            "/// Doc.\n#[x] fn a() {}\n    #[y] pub fn é() { let ü = 1; }\n"
        );
        assert_eq!(out.lines().count(), text.lines().count());
    }

    #[test]
    fn a_position_past_the_text_is_left_out() {
        let text = "fn a() {}";
        let out = apply(
            text,
            &[Insertion {
                at: at(9, 0),
                attribute: "#[x]",
            }],
        );
        assert_eq!(out, text);
    }
}
