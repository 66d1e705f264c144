//! Evaluating simple predicates on the events a process executes.

use ppd_formats::Event;
use ppd_formats::condition::{Bearing, Scope, Stable};

use super::resolve::{Component, Matcher};

impl Component {
    /// Whether `event` is the kind of event this component is about (before its condition).
    pub fn matches_event(&self, event: &Event) -> bool {
        match (&self.matcher, event) {
            (Matcher::Enter(f), Event::EblockEnter { eblock, .. }) => **eblock == **f,
            (Matcher::Exit(f), Event::EblockExit { eblock, .. }) => **eblock == **f,
            (Matcher::Mark(l), Event::Mark { label, .. }) => **label == **l,
            (Matcher::Send(c), Event::Send { channel, .. }) => c.is_none_or(|c| c == *channel),
            (Matcher::Recv(c), Event::Recv { channel, .. }) => c.is_none_or(|c| c == *channel),
            _ => false,
        }
    }

    /// Whether the component holds right after `event` (Manabe & Imase's SP_i(e)).
    pub fn holds_after(&self, event: &Event, entry_prelog: Option<&[u8]>) -> bool {
        self.matches_event(event)
            && self
                .condition
                .as_ref()
                .is_none_or(|c| Scope::of(event, entry_prelog).eval(c))
    }
}

/// A component read as a stable state (Spezialetti & Gupta's local event): `enter F [if E]`
/// holds while the process is inside an instance of F that satisfied E; `mark L if E` from a
/// mark L satisfying E until the next mark L that does not; a send, receive or exit only right
/// after it. The state machine is [`Stable`]; this says how each event bears on it.
#[derive(Debug, Clone, Default)]
pub struct Interval(Stable);

impl Interval {
    /// Updates the state with the event the process just executed; returns whether the
    /// component holds now.
    pub fn observe(&mut self, c: &Component, event: &Event, entry_prelog: Option<&[u8]>) -> bool {
        let holds = || c.holds_after(event, entry_prelog);
        let bearing = match (&c.matcher, event) {
            (Matcher::Enter(f), Event::EblockEnter { eblock, .. }) if **eblock == **f => {
                Bearing::Opens(holds())
            }
            (Matcher::Enter(f), Event::EblockExit { eblock, .. }) if **eblock == **f => {
                Bearing::Closes
            }
            (Matcher::Enter(_), _) => Bearing::Leaves,
            (Matcher::Mark(l), Event::Mark { label, .. }) if **label == **l => {
                Bearing::Sets(holds())
            }
            (Matcher::Mark(_), _) => Bearing::Leaves,
            _ => Bearing::Sets(holds()),
        };
        self.0.observe(bearing)
    }

    /// Whether the component holds.
    pub fn holds(&self) -> bool {
        self.0.holds()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::{EventPattern, Predicate, parse};
    use ppd_formats::ProcessId;
    use ppd_formats::value;
    use std::sync::Arc;

    /// The component `text` (one simple predicate), bound without a recording.
    fn component(text: &str) -> Component {
        let Predicate::Simple(simple) = parse(text).unwrap() else {
            panic!("{text} is not a simple predicate");
        };
        let matcher = match &simple.event {
            EventPattern::Enter(f) => Matcher::Enter(f.clone()),
            EventPattern::Exit(f) => Matcher::Exit(f.clone()),
            EventPattern::Mark(l) => Matcher::Mark(l.clone()),
            EventPattern::Send(_) => Matcher::Send(None),
            EventPattern::Recv(_) => Matcher::Recv(None),
        };
        Component {
            id: 0,
            process: ProcessId(0),
            matcher,
            condition: simple.condition,
            text: text.to_owned(),
        }
    }

    fn mark(label: &str, v: impl serde::Serialize) -> Event {
        Event::Mark {
            label: Arc::from(label),
            site: None,
            value: value::encode(&v).unwrap().into(),
        }
    }

    #[derive(serde::Serialize)]
    struct Account {
        owner: &'static str,
        balance: i64,
    }

    #[test]
    fn conditions_compare_logged_values() {
        let c = component("p: mark balance if value.balance < 0 && value.owner == \"ann\"");
        assert!(c.holds_after(
            &mark(
                "balance",
                Account {
                    owner: "ann",
                    balance: -3
                }
            ),
            None
        ));
        assert!(!c.holds_after(
            &mark(
                "balance",
                Account {
                    owner: "ann",
                    balance: 3
                }
            ),
            None
        ));
        assert!(!c.holds_after(
            &mark(
                "balance",
                Account {
                    owner: "bo",
                    balance: -3
                }
            ),
            None
        ));
        assert!(!c.holds_after(
            &mark(
                "holding",
                Account {
                    owner: "ann",
                    balance: -3
                }
            ),
            None
        ));
        let c = component("p: mark balance if value > 2.5");
        assert!(c.holds_after(&mark("balance", 3u64), None));
        assert!(
            !c.holds_after(&mark("balance", "3"), None),
            "a string is not a number"
        );
    }

    #[test]
    fn conditions_read_left_to_right() {
        // `a || b && c` is `(a || b) && c`, as the predicate prints it.
        let c = component("p: mark balance if value > 0 || value < -10 && value != 5");
        assert_eq!(
            c.condition.as_ref().unwrap().to_string(),
            "(value > 0 || value < -10) && value != 5"
        );
        assert!(c.holds_after(&mark("balance", 3), None));
        assert!(!c.holds_after(&mark("balance", 5), None));
        assert!(c.holds_after(&mark("balance", -20), None));
        assert!(!c.holds_after(&mark("balance", -3), None));
    }

    #[test]
    fn exits_see_arguments_and_return_value() {
        let prelog = value::encode(
            &[("account", 1i64), ("amount", 50)]
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .unwrap();
        let postlog = value::encode(
            &[("%0", -20i64)]
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .unwrap();
        let exit = Event::EblockExit {
            eblock: Arc::from("f"),
            postlog: postlog.into(),
        };
        assert!(component("p: exit f if %0 < 0 && amount == 50").holds_after(&exit, Some(&prelog)));
        assert!(!component("p: exit f if %0 > 0").holds_after(&exit, Some(&prelog)));
    }

    #[test]
    fn intervals_hold_until_the_state_changes() {
        let c = component("p: mark holding if value == true");
        let mut i = Interval::default();
        assert!(i.observe(&c, &mark("holding", true), None));
        assert!(
            i.observe(&c, &mark("balance", 1), None),
            "other marks keep the state"
        );
        assert!(!i.observe(&c, &mark("holding", false), None));
        let c = component("p: enter f if amount > 10");
        let enter = |amount: i64| Event::EblockEnter {
            eblock: Arc::from("f"),
            site: None,
            prelog: value::encode(
                &[("account", 0i64), ("amount", amount)]
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>(),
            )
            .unwrap()
            .into(),
        };
        let exit = Event::EblockExit {
            eblock: Arc::from("f"),
            postlog: value::encode(&()).unwrap().into(),
        };
        let mut i = Interval::default();
        assert!(i.observe(&c, &enter(50), None));
        assert!(i.observe(&c, &mark("balance", 1), None));
        assert!(
            i.observe(&c, &enter(5), None),
            "still inside the outer instance"
        );
        assert!(i.observe(&c, &exit, None));
        assert!(!i.observe(&c, &exit, None));
    }
}
