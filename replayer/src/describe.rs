//! One-line descriptions of events, for divergence reports and halted states.

use std::fmt::Display;

use ppd_formats::event::Repr;
use ppd_formats::{Event, value};

fn at<S: Display>(site: &Option<S>) -> String {
    site.as_ref()
        .map(|s| format!(" at {s}"))
        .unwrap_or_default()
}

fn show<B: AsRef<[u8]>>(bytes: &Option<B>) -> String {
    bytes
        .as_ref()
        .map(|b| format!(" = {}", value::show_bytes(b.as_ref())))
        .unwrap_or_default()
}

/// Describes an event: kind, object, the choice it records, values and source location.
pub fn describe<R: Repr>(event: &Event<R>) -> String
where
    R::Site: Display,
    R::Name: Display,
{
    match event {
        Event::Start { parent } => match parent {
            Some(p) => format!("start (spawned by {p})"),
            None => "start".into(),
        },
        Event::Spawn { child, site } => format!("spawn {child}{}", at(site)),
        Event::Join { child, site } => format!("join {child}{}", at(site)),
        Event::Exit => "exit".into(),
        Event::Panic {
            message,
            file,
            line,
        } => format!("panic {:?} at {}:{line}", message.as_ref(), file.as_ref()),
        Event::Create {
            object, kind, site, ..
        } => format!("create {kind:?} {object}{}", at(site)).to_lowercase(),
        Event::Send {
            channel,
            seq,
            site,
            payload,
        } => format!(
            "send message {seq} on {channel}{}{}",
            show(payload),
            at(site)
        ),
        Event::Recv {
            channel,
            sender,
            seq,
            site,
            payload,
        } => format!(
            "recv message {seq} from {sender} on {channel}{}{}",
            show(payload),
            at(site)
        ),
        Event::RecvNone {
            channel,
            outcome,
            site,
        } => format!("receive on {channel} got nothing ({outcome:?}){}", at(site)),
        Event::Select { index, site } => format!("select chose operation {index}{}", at(site)),
        Event::Lock {
            object,
            version,
            site,
            value,
            ..
        } => format!(
            "lock {object} (acquisition {version}){}{}",
            show(value),
            at(site)
        ),
        Event::Unlock { object, site } => format!("unlock {object}{}", at(site)),
        Event::SemAcquire {
            object,
            version,
            site,
            ..
        } => format!(
            "acquire semaphore {object} (operation {version}){}",
            at(site)
        ),
        Event::SemRelease {
            object,
            version,
            site,
            ..
        } => format!(
            "release semaphore {object} (operation {version}){}",
            at(site)
        ),
        Event::Atomic {
            object,
            version,
            op,
            site,
            value,
            ..
        } => format!(
            "{op:?} {object} (access {version}){}{}",
            value.map(|v| format!(" read {v}")).unwrap_or_default(),
            at(site)
        )
        .to_lowercase(),
        Event::Clock { source, nanos } => {
            format!("{source:?} clock read {nanos} ns").to_lowercase()
        }
        Event::Random { value } => format!("random {value:#x}"),
        Event::EblockEnter {
            eblock,
            site,
            prelog,
        } => format!(
            "enter {eblock}({}){}",
            value::show_bytes(prelog.as_ref()),
            at(site)
        ),
        Event::EblockExit { eblock, postlog } => {
            format!("exit {eblock} -> {}", value::show_bytes(postlog.as_ref()))
        }
        Event::Mark { label, site, value } => format!(
            "mark {label} = {}{}",
            value::show_bytes(value.as_ref()),
            at(site)
        ),
        Event::Blocked { object, site } => format!("blocked on {object}{}", at(site)),
        Event::JoinBlocked { child, site } => format!("waits in join for {child}{}", at(site)),
        Event::Undelivered { channel, seq, site } => format!(
            "message {seq} on {channel} not delivered: every receiver was gone{}",
            at(site)
        ),
    }
}
