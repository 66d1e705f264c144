use proptest::prelude::*;

use super::*;

fn pid() -> impl Strategy<Value = ProcessId> {
    any::<u32>().prop_map(ProcessId)
}

fn one_of<T: Copy + std::fmt::Debug + 'static>(all: &'static [T]) -> impl Strategy<Value = T> {
    (0..all.len()).prop_map(move |i| all[i])
}

/// Every kind of event, with fields anywhere in their ranges (the extremes included).
fn op() -> impl Strategy<Value = Op> {
    let n = any::<u32>;
    let v = any::<u64>;
    prop_oneof![
        proptest::option::of(pid()).prop_map(|parent| Op::Start { parent }),
        pid().prop_map(|child| Op::Spawn { child }),
        pid().prop_map(|child| Op::Join { child }),
        pid().prop_map(|child| Op::JoinBlocked { child }),
        Just(Op::Exit),
        Just(Op::Clock),
        Just(Op::Random),
        n().prop_map(|message| Op::Panic { message }),
        n().prop_map(|name| Op::EblockEnter { name }),
        n().prop_map(|name| Op::EblockExit { name }),
        n().prop_map(|label| Op::Mark { label }),
        n().prop_map(|object| Op::Create { object }),
        n().prop_map(|object| Op::Unlock { object }),
        n().prop_map(|object| Op::Blocked { object }),
        n().prop_map(|socket| Op::NetOpen { socket }),
        n().prop_map(|socket| Op::NetFail { socket }),
        (n(), v()).prop_map(|(channel, seq)| Op::Send { channel, seq }),
        (n(), v()).prop_map(|(channel, seq)| Op::Undelivered { channel, seq }),
        (n(), pid(), v()).prop_map(|(channel, sender, seq)| Op::Recv {
            channel,
            sender,
            seq
        }),
        (n(), one_of(&RECV_OUTCOMES))
            .prop_map(|(channel, outcome)| Op::RecvNone { channel, outcome }),
        n().prop_map(|index| Op::Select { index }),
        (n(), v(), proptest::option::of(pid())).prop_map(|(object, version, prev)| Op::Lock {
            object,
            version,
            prev
        }),
        (n(), v(), proptest::option::of(pid())).prop_map(|(object, version, prev)| {
            Op::SemAcquire {
                object,
                version,
                prev,
            }
        }),
        (n(), v(), proptest::option::of(pid())).prop_map(|(object, version, prev)| {
            Op::SemRelease {
                object,
                version,
                prev,
            }
        }),
        (
            n(),
            v(),
            proptest::option::of(pid()),
            one_of(&ATOMIC_OPS),
            one_of(&ORDERINGS)
        )
            .prop_map(|(object, version, prev, op, ordering)| Op::Atomic {
                object,
                version,
                prev,
                op,
                ordering
            }),
        v().prop_map(|nanos| Op::Sleep { nanos }),
        (one_of(&QUESTIONS), v()).prop_map(|(question, value)| Op::Answer { question, value }),
        (n(), one_of(&OUTCOMES)).prop_map(|(object, outcome)| Op::Outcome { object, outcome }),
        (n(), v(), proptest::option::of(pid()), one_of(&RW_MODES)).prop_map(
            |(object, version, prev, mode)| Op::RwAcquire {
                object,
                version,
                prev,
                mode
            }
        ),
        (n(), v(), one_of(&RW_MODES)).prop_map(|(object, version, mode)| Op::RwRelease {
            object,
            version,
            mode
        }),
        (n(), v(), any::<bool>()).prop_map(|(socket, seq, datagram)| Op::NetWrite {
            socket,
            seq,
            datagram
        }),
        (n(), n(), v(), any::<bool>(), any::<bool>()).prop_map(
            |(socket, peer, seq, datagram, end)| Op::NetRead {
                socket,
                peer,
                seq,
                datagram,
                end
            }
        ),
    ]
}

fn ev() -> impl Strategy<Value = Ev> {
    (op(), any::<u32>()).prop_map(|(op, site)| Ev { op, site })
}

fn compact(events: &[Ev]) -> Compact {
    let mut store = Compact::default();
    store.reserve(events.len());
    for &e in events {
        store.push(e);
    }
    store
}

proptest! {
    #[test]
    fn a_compact_store_gives_back_every_event_in_order_and_by_position(
        events in proptest::collection::vec(ev(), 0..80),
    ) {
        let store = compact(&events);
        prop_assert_eq!(store.len(), events.len());
        prop_assert_eq!(&store.iter().collect::<Vec<_>>(), &events);
        for k in 0..=events.len() {
            prop_assert_eq!(store.at(k), events.get(k).copied());
            prop_assert_eq!(store.iter_from(k).collect::<Vec<_>>(), events[k..].to_vec());
        }
        prop_assert_eq!(store.last(), events.as_slice().last().copied());
    }

    #[test]
    fn pairing_a_socket_read_in_a_compact_store_changes_that_read_only(
        events in proptest::collection::vec(ev(), 1..60),
        pick in any::<proptest::sample::Index>(),
        peer in any::<u32>(),
        seq in any::<u64>(),
    ) {
        let mut expected = events.clone();
        let mut store = compact(&events);
        let k = pick.index(events.len());
        store.set_read_source(k, peer, seq);
        expected.set_read_source(k, peer, seq);
        prop_assert_eq!(store.iter().collect::<Vec<_>>(), expected);
    }
}

#[test]
fn a_run_of_typical_events_takes_a_few_bytes_each() {
    let events: Vec<Ev> = (0..10_000u32)
        .map(|k| Ev {
            op: match k % 4 {
                0 => Op::Send {
                    channel: 1,
                    seq: u64::from(k),
                },
                1 => Op::Blocked { object: 2 },
                2 => Op::EblockEnter { name: 3 },
                _ => Op::Random,
            },
            site: k % 20,
        })
        .collect();
    let store = compact(&events);
    assert!(
        store.bytes_per_event() < 5.0,
        "{} bytes per event",
        store.bytes_per_event()
    );
}
