//! One-line descriptions of events, for divergence reports and halted states.

use std::fmt::Display;

use ppd_formats::event::{OpenHow, Outcome, Repr};
use ppd_formats::{Event, ObjectId, ProcessId, value};

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

/// The representations whose events can be described: their sites and names print.
trait Shown: Repr<Site: Display, Name: Display> {}

impl<R: Repr<Site: Display, Name: Display>> Shown for R {}

/// What descriptions call processes and objects.
pub trait Names {
    /// A process, as the user knows it.
    fn process(&self, id: ProcessId) -> String;
    /// An object: its name when it was created with one.
    fn object(&self, id: ObjectId) -> String;
}

/// Processes and objects by their ids (`p2`, `#0.1`).
struct Ids;

impl Names for Ids {
    fn process(&self, id: ProcessId) -> String {
        id.to_string()
    }

    fn object(&self, id: ObjectId) -> String {
        id.to_string()
    }
}

/// Describes an event: kind, object, the choice it records, values and source location.
pub fn describe<R: Repr>(event: &Event<R>) -> String
where
    R::Site: Display,
    R::Name: Display,
{
    describe_with(event, &Ids)
}

/// Like [`describe`], with processes and objects as `names` calls them. Each class of event
/// is described by its own function below; the dispatch names every variant, so that a new
/// kind is a compile error here until it is described.
pub fn describe_with<R: Repr>(event: &Event<R>, names: &dyn Names) -> String
where
    R::Site: Display,
    R::Name: Display,
{
    match event {
        Event::Start { .. }
        | Event::Spawn { .. }
        | Event::Join { .. }
        | Event::Exit
        | Event::Panic { .. }
        | Event::Blocked { .. }
        | Event::JoinBlocked { .. }
        | Event::Sleep { .. } => describe_lifecycle(event, names),
        Event::Create { .. }
        | Event::Send { .. }
        | Event::Recv { .. }
        | Event::RecvNone { .. }
        | Event::Select { .. }
        | Event::Undelivered { .. } => describe_message(event, names),
        Event::Lock { .. }
        | Event::Unlock { .. }
        | Event::SemAcquire { .. }
        | Event::SemRelease { .. }
        | Event::Atomic { .. }
        | Event::RwAcquire { .. }
        | Event::RwRelease { .. }
        | Event::Outcome { .. } => describe_sync(event, names),
        Event::Clock { .. }
        | Event::Random { .. }
        | Event::Answer { .. }
        | Event::EblockEnter { .. }
        | Event::EblockExit { .. }
        | Event::Mark { .. } => describe_input(event),
        Event::NetOpen { .. }
        | Event::NetWrite { .. }
        | Event::NetRead { .. }
        | Event::NetSendTo { .. }
        | Event::NetRecvFrom { .. }
        | Event::NetFail { .. } => describe_socket(event, names),
    }
}

/// A process's life and its waits.
fn describe_lifecycle<R: Shown>(event: &Event<R>, names: &dyn Names) -> String {
    let p = |id: &ProcessId| names.process(*id);
    let o = |id: &ObjectId| names.object(*id);
    match event {
        Event::Start { parent } => match parent {
            Some(parent) => format!("start (spawned by {})", p(parent)),
            None => "start".into(),
        },
        Event::Spawn { child, site } => format!("spawn {}{}", p(child), at(site)),
        Event::Join { child, site } => format!("join {}{}", p(child), at(site)),
        Event::Exit => "exit".into(),
        Event::Panic {
            message,
            file,
            line,
        } => format!("panic {:?} at {}:{line}", message.as_ref(), file.as_ref()),
        Event::Blocked { object, site } => format!("blocked on {}{}", o(object), at(site)),
        Event::JoinBlocked { child, site } => {
            format!("waits in join for {}{}", p(child), at(site))
        }
        Event::Sleep { nanos, site } => format!(
            "sleeps for {:?}{}",
            std::time::Duration::from_nanos(*nanos),
            at(site)
        ),
        _ => unreachable!("{} is not a lifecycle or wait event", event.kind()),
    }
}

/// Objects made and channel messages.
fn describe_message<R: Shown>(event: &Event<R>, names: &dyn Names) -> String {
    let p = |id: &ProcessId| names.process(*id);
    let o = |id: &ObjectId| names.object(*id);
    match event {
        Event::Create {
            object, kind, site, ..
        } => format!(
            "{} {}{}",
            format!("create {kind:?}").to_lowercase(),
            o(object),
            at(site)
        ),
        Event::Send {
            channel,
            seq,
            site,
            payload,
        } => format!(
            "send message {seq} on {}{}{}",
            o(channel),
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
            "recv message {seq} from {} on {}{}{}",
            p(sender),
            o(channel),
            show(payload),
            at(site)
        ),
        Event::RecvNone {
            channel,
            outcome,
            site,
        } => format!(
            "receive on {} got nothing ({outcome:?}){}",
            o(channel),
            at(site)
        ),
        Event::Select { index, site } => format!("select chose operation {index}{}", at(site)),
        Event::Undelivered { channel, seq, site } => format!(
            "message {seq} on {} not delivered: every receiver was gone{}",
            o(channel),
            at(site)
        ),
        _ => unreachable!("{} is not a create or message event", event.kind()),
    }
}

/// Locks, semaphores, atomics and attempts.
fn describe_sync<R: Shown>(event: &Event<R>, names: &dyn Names) -> String {
    let o = |id: &ObjectId| names.object(*id);
    match event {
        Event::Lock {
            object,
            version,
            site,
            value,
            ..
        } => format!(
            "lock {} (acquisition {version}){}{}",
            o(object),
            show(value),
            at(site)
        ),
        Event::Unlock { object, site } => format!("unlock {}{}", o(object), at(site)),
        Event::RwAcquire {
            object,
            version,
            mode,
            site,
            value,
            ..
        } => format!(
            "{} lock {} (operation {version}){}{}",
            rw_mode(*mode),
            o(object),
            show(value),
            at(site)
        ),
        Event::RwRelease {
            object,
            version,
            mode,
            site,
            ..
        } => format!(
            "{} unlock {} (operation {version}){}",
            rw_mode(*mode),
            o(object),
            at(site)
        ),
        Event::SemAcquire {
            object,
            version,
            site,
            ..
        } => format!(
            "acquire semaphore {} (operation {version}){}",
            o(object),
            at(site)
        ),
        Event::SemRelease {
            object,
            version,
            site,
            ..
        } => format!(
            "release semaphore {} (operation {version}){}",
            o(object),
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
            "{} {} (access {version}){}{}",
            format!("{op:?}").to_lowercase(),
            o(object),
            value.map(|v| format!(" read {v}")).unwrap_or_default(),
            at(site)
        ),
        Event::Outcome {
            object,
            outcome: Outcome::WouldBlock,
            site,
        } => format!("try_lock found {} held{}", o(object), at(site)),
        Event::Outcome {
            object,
            outcome: Outcome::Acquired,
            site,
        } => format!("try_lock acquires {}{}", o(object), at(site)),
        _ => unreachable!("{} is not a synchronisation event", event.kind()),
    }
}

/// Values read from outside, e-blocks and marks: none names a process or an object.
fn describe_input<R: Shown>(event: &Event<R>) -> String {
    match event {
        Event::Clock { source, nanos } => {
            format!("{source:?} clock read {nanos} ns").to_lowercase()
        }
        Event::Random { value } => format!("random {value:#x}"),
        Event::Answer {
            question,
            value,
            site,
        } => format!("{}{}", question.describe(*value), at(site)),
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
        _ => unreachable!("{} is not an input, e-block or mark event", event.kind()),
    }
}

/// Socket events.
fn describe_socket<R: Shown>(event: &Event<R>, names: &dyn Names) -> String {
    let o = |id: &ObjectId| names.object(*id);
    match event {
        Event::NetOpen {
            socket,
            kind,
            how,
            local,
            peer,
            site,
            ..
        } => {
            let (local, peer) = (local.as_ref(), peer.as_ref());
            let what = match how {
                OpenHow::Bind => format!("bind {} {local}", kind.name()),
                OpenHow::Connect => format!("connect {} to {peer}", kind.name()),
                OpenHow::Accept => format!("accept {} from {}", kind.name(), unnamed(peer)),
                OpenHow::Pair => format!("open a {} pair", kind.name()),
            };
            format!("{what} as {}{}", o(socket), at(site))
        }
        Event::NetWrite {
            socket,
            offset,
            len,
            site,
            ..
        } => format!(
            "write {len} bytes to {} (stream bytes {offset}..{}){}",
            o(socket),
            offset + len,
            at(site)
        ),
        Event::NetRead {
            socket,
            offset,
            peek,
            data,
            site,
        } => {
            let data = data.as_ref();
            let verb = if *peek { "peek" } else { "read" };
            if data.is_empty() && !*peek {
                format!("read the end of {}'s stream{}", o(socket), at(site))
            } else {
                format!(
                    "{verb} {} from {} (stream bytes {offset}..{}){}",
                    show_data(data),
                    o(socket),
                    offset + data.len() as u64,
                    at(site)
                )
            }
        }
        Event::NetSendTo {
            socket,
            to,
            len,
            site,
            ..
        } => format!(
            "send a datagram of {len} bytes from {} to {}{}",
            o(socket),
            to.as_ref(),
            at(site)
        ),
        Event::NetRecvFrom {
            socket,
            from,
            peek,
            data,
            site,
        } => format!(
            "{} {} on {} from {}{}",
            if *peek { "peek" } else { "receive" },
            show_data(data.as_ref()),
            o(socket),
            unnamed(from.as_ref()),
            at(site)
        ),
        Event::NetFail {
            socket,
            op,
            error,
            site,
        } => format!("{} on {} failed: {error}{}", op.name(), o(socket), at(site)),
        _ => unreachable!("{} is not a socket event", event.kind()),
    }
}

/// A socket address as reports show it: an unnamed one says so.
fn unnamed(address: &str) -> &str {
    if address.is_empty() {
        "an unnamed socket"
    } else {
        address
    }
}

/// Bytes read from a socket, as reports show them: escaped, the first 48 at most, and their
/// count.
fn show_data(bytes: &[u8]) -> String {
    const SHOWN: usize = 48;
    let shown: String = bytes
        .iter()
        .take(SHOWN)
        .flat_map(|b| b.escape_ascii())
        .map(char::from)
        .collect();
    let more = if bytes.len() > SHOWN { "…" } else { "" };
    format!("\"{shown}{more}\" ({} bytes)", bytes.len())
}

fn rw_mode(mode: ppd_formats::event::RwMode) -> &'static str {
    match mode {
        ppd_formats::event::RwMode::Read => "read",
        ppd_formats::event::RwMode::Write => "write",
    }
}
