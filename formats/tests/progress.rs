//! Progress reports: a stage that reads logs counts what log readers decode; a pass counts its
//! own events with its counter, and what a reader decodes meanwhile is not counted again. (Its
//! own test binary: the sink is installed for the whole process.)

use std::sync::{Arc, Mutex};

use ppd_formats::progress::{self, Counter, Progress};

/// Each stage reported, with its total and what was counted in it.
#[derive(Default)]
struct Seen(Mutex<Vec<(String, Option<u64>, u64)>>);

/// The sink the reports go to, sharing what it saw with the test.
struct Sink(Arc<Seen>);

impl Progress for Sink {
    fn stage(&self, what: &str, events: Option<u64>) {
        self.0.0.lock().unwrap().push((what.to_owned(), events, 0));
    }

    fn advance(&self, events: u64) {
        if let Some(last) = self.0.0.lock().unwrap().last_mut() {
            last.2 += events;
        }
    }
}

#[test]
fn a_pass_counts_its_own_events_and_not_the_blocks_a_reader_decodes_meanwhile() {
    let seen = Arc::new(Seen::default());
    progress::report_to(Box::new(Sink(Arc::clone(&seen))));

    progress::stage("reading", Some(100_000));
    progress::advance(40_000);
    progress::advance(60_000);

    let mut pass = progress::pass("going through", 100_000);
    // A store that decodes its events from the log again while the pass reads them.
    progress::advance(100_000);
    for _ in 0..100_000 {
        pass.add(1);
    }
    // A pass beside it over the same events.
    let mut beside = Counter::silent();
    beside.add(100_000);
    drop(beside);
    drop(pass);

    progress::stage("reading again", None);
    progress::advance(3);

    assert_eq!(
        *seen.0.lock().unwrap(),
        vec![
            ("reading".to_owned(), Some(100_000), 100_000),
            ("going through".to_owned(), Some(100_000), 100_000),
            ("reading again".to_owned(), None, 3),
        ]
    );
}
