//! Places: what a trace record defines or uses, as `#[ppd::eblock]` names them
//! (`bank.accounts[account].balance`, `self.total`, `*count`, `pair.0`), and the parts of a
//! logged value they select.
//!
//! A why-query follows a place, not only a variable: `balance` of account 1 was set by the
//! last statement that assigned `bank.accounts[account].balance` while `account` was 1, not by
//! the one that set `bank.went_negative`. Index variables are resolved to the values they had
//! (concretized) before places are compared; an index that cannot be resolved may be any.

use std::fmt;

use ppd_formats::value::Value;

/// A variable and the path to a part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Place {
    /// The variable (`bank`, `self`, `%0`).
    pub root: String,
    /// Fields and indexes, outermost first.
    pub steps: Vec<Projection>,
}

/// One step into a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Projection {
    /// `.name` (or `.0` of a tuple).
    Field(String),
    /// `[...]`.
    Index(Index),
}

/// What an index is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Index {
    /// A variable, not yet resolved.
    Var(String),
    /// A known position or integer key.
    At(u64),
    /// An expression that was not resolved: any position.
    Unknown(String),
}

impl Place {
    /// A whole variable.
    pub fn variable(name: &str) -> Place {
        Place {
            root: name.to_owned(),
            steps: Vec::new(),
        }
    }

    /// Parses a place as traces and users write it. Dereferences (`*count`) are transparent:
    /// a logged value is the value behind the reference. `None` for text that is not a place.
    pub fn parse(text: &str) -> Option<Place> {
        let text = text.trim().trim_start_matches(['*', '&']).trim();
        let text = text.strip_prefix("mut ").unwrap_or(text).trim();
        let root_end = text.find(['.', '[']).unwrap_or(text.len());
        let root = &text[..root_end];
        let is_name = |s: &str| {
            !s.is_empty()
                && (s.chars().all(|c| c.is_alphanumeric() || c == '_')
                    || (s.starts_with('%') && s[1..].chars().all(|c| c.is_ascii_digit())))
        };
        if !is_name(root) {
            return None;
        }
        let mut steps = Vec::new();
        let mut rest = &text[root_end..];
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let name = &after[..end];
                if !is_name(name) {
                    return None;
                }
                steps.push(match name.parse::<u64>() {
                    // `.1` on an array (a user's `accounts.1`) is an index; on a tuple the
                    // logged value is an array too.
                    Ok(n) => Projection::Index(Index::At(n)),
                    Err(_) => Projection::Field(name.to_owned()),
                });
                rest = &after[end..];
            } else if rest.starts_with('[') {
                let close = matching_bracket(rest)?;
                let inside = rest[1..close].trim();
                steps.push(Projection::Index(Index::of(inside)));
                rest = &rest[close + 1..];
            } else {
                return None;
            }
        }
        Some(Place {
            root: root.to_owned(),
            steps,
        })
    }

    /// The variables its indexes read.
    pub fn index_variables(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().filter_map(|s| match s {
            Projection::Index(Index::Var(v)) => Some(v.as_str()),
            _ => None,
        })
    }

    /// The place with every index variable replaced by its value, or by "any" when `value_of`
    /// does not know it.
    pub fn concretize(&self, mut value_of: impl FnMut(&str) -> Option<u64>) -> Place {
        let steps = self
            .steps
            .iter()
            .map(|s| match s {
                Projection::Index(Index::Var(v)) => Projection::Index(match value_of(v) {
                    Some(n) => Index::At(n),
                    None => Index::Unknown(v.clone()),
                }),
                other => other.clone(),
            })
            .collect();
        Place {
            root: self.root.clone(),
            steps,
        }
    }

    /// Whether the two may name overlapping parts of one variable: one contains the other.
    pub fn overlaps(&self, other: &Place) -> bool {
        self.root == other.root
            && self
                .steps
                .iter()
                .zip(&other.steps)
                .all(|(a, b)| a.may_equal(b))
    }

    /// Whether `self` is `outer` or a part of it.
    pub fn is_within(&self, outer: &Place) -> bool {
        self.steps.len() >= outer.steps.len() && self.overlaps(outer)
    }

    /// `self` with its prefix `from` replaced by `to`: `bank.accounts[1]` rebased from `bank`
    /// to `self.bank` is `self.bank.accounts[1]`. `self` must be within `from`.
    pub fn rebase(&self, from: &Place, to: &Place) -> Place {
        let mut steps = to.steps.clone();
        steps.extend(self.steps.iter().skip(from.steps.len()).cloned());
        Place {
            root: to.root.clone(),
            steps,
        }
    }

    /// The name a parameter passing this place would likely have: its last field, or its
    /// variable.
    pub fn last_name(&self) -> &str {
        self.steps
            .iter()
            .rev()
            .find_map(|s| match s {
                Projection::Field(f) => Some(f.as_str()),
                Projection::Index(_) => None,
            })
            .unwrap_or(&self.root)
    }

    /// The part of `value` (the value of `outer`) that `self` names; `None` when the value
    /// has no such part or an index is unknown.
    pub fn select<'v>(&self, outer: &Place, value: &'v Value) -> Option<&'v Value> {
        let mut current = value;
        for step in self.steps.iter().skip(outer.steps.len()) {
            current = step.select(current)?;
        }
        Some(current)
    }
}

impl Index {
    fn of(inside: &str) -> Index {
        if let Ok(n) = inside.parse::<u64>() {
            Index::At(n)
        } else if !inside.is_empty() && inside.chars().all(|c| c.is_alphanumeric() || c == '_') {
            Index::Var(inside.to_owned())
        } else {
            Index::Unknown(inside.to_owned())
        }
    }
}

impl Projection {
    fn may_equal(&self, other: &Projection) -> bool {
        match (self, other) {
            (Projection::Field(a), Projection::Field(b)) => a == b,
            (Projection::Index(Index::At(a)), Projection::Index(Index::At(b))) => a == b,
            (Projection::Index(_), Projection::Index(_)) => true,
            _ => false,
        }
    }

    fn select<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        match (self, value) {
            (Projection::Field(f), Value::Map(entries)) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(f))
                .map(|(_, v)| v),
            (Projection::Index(Index::At(n)), Value::Array(items)) => {
                items.get(usize::try_from(*n).ok()?)
            }
            (Projection::Index(Index::At(n)), Value::Map(entries)) => entries
                .iter()
                .find(|(k, _)| k.as_u64() == Some(*n) || k.as_str() == Some(&n.to_string()))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

fn matching_bracket(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.root)?;
        for step in &self.steps {
            match step {
                Projection::Field(name) => write!(f, ".{name}")?,
                Projection::Index(Index::Var(v) | Index::Unknown(v)) => write!(f, "[{v}]")?,
                Projection::Index(Index::At(n)) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Place {
        Place::parse(text).unwrap_or_else(|| panic!("{text} should parse"))
    }

    #[test]
    fn places_parse_as_traces_and_users_write_them() {
        assert_eq!(
            p("bank.accounts[account].balance").to_string(),
            "bank.accounts[account].balance"
        );
        assert_eq!(p("*count"), Place::variable("count"));
        assert_eq!(p("bank.accounts.1"), p("bank.accounts[1]"));
        assert_eq!(
            p("v[i+1]").steps,
            [Projection::Index(Index::Unknown("i+1".into()))]
        );
        assert_eq!(p("m[a[b]].x").steps.len(), 2);
        assert_eq!(p("%0").root, "%0");
        for bad in ["", "a..b", "a[1", "f(x)", "a b", ".x"] {
            assert_eq!(Place::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn places_overlap_when_one_contains_the_other() {
        let balance = p("bank.accounts[account].balance").concretize(|_| Some(1));
        assert!(balance.overlaps(&p("bank")));
        assert!(balance.is_within(&p("bank")));
        assert!(!p("bank").is_within(&balance));
        assert!(balance.overlaps(&p("bank.accounts[1]")));
        assert!(!balance.overlaps(&p("bank.accounts[0]")));
        assert!(!balance.overlaps(&p("bank.went_negative")));
        assert!(
            p("bank.accounts[k].balance")
                .concretize(|_| None)
                .overlaps(&balance)
        );
        assert_eq!(balance.last_name(), "balance");
        assert_eq!(
            balance.rebase(&p("bank"), &p("self.bank")).to_string(),
            "self.bank.accounts[1].balance"
        );
    }

    #[test]
    fn a_place_selects_its_part_of_a_logged_value() {
        let bank = Value::Map(vec![(
            Value::from("accounts"),
            Value::Array(vec![
                Value::Map(vec![(Value::from("balance"), Value::from(100))]),
                Value::Map(vec![(Value::from("balance"), Value::from(-20))]),
            ]),
        )]);
        let balance = p("bank.accounts[1].balance");
        assert_eq!(balance.select(&p("bank"), &bank), Some(&Value::from(-20)));
        assert_eq!(
            p("bank.accounts[7].balance").select(&p("bank"), &bank),
            None
        );
        assert_eq!(p("bank.accounts[i]").select(&p("bank"), &bank), None);
    }
}
