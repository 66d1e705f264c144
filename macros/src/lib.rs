//! The attributes of ppd, re-exported by the `ppd` crate:
//!
//! * `#[ppd::main]` on the program's entry point selects the runtime mode (pass-through,
//!   record, replay or emulate) from the environment before the body runs, and closes the
//!   logs after it.
//! * `#[ppd::test]` on a test function does the same for the one test a test binary runs
//!   under `ppd record`.
//! * `#[ppd::eblock]` on a function makes it an e-block: its arguments are logged on entry (the
//!   prelog), its result and final `&mut` arguments on exit (the postlog), and a tracing twin
//!   and an emulator are generated so that `ppd why` can re-execute one call from its log.
//! * `#[ppd::eblocks]` on an `impl` block lets its methods be e-blocks.
//! * `#[ppd::not_traced]` on a function or `impl` block keeps `ppd build`'s automatic e-blocks
//!   off it.
//!
//! Each attribute is split into parsing (syntax into a model), checking (every error collected
//! with its span, never a panic) and expansion.

#![deny(missing_docs)]

mod binding;
mod body;
mod eblock;
mod entry;

use proc_macro::TokenStream;

/// Makes a function an e-block (Miller & Choi's emulation block): its arguments are logged
/// when it is entered (the prelog), its return value and the final values of its `&mut`
/// arguments when it returns (the postlog), so that `ppd why` can re-execute any one call from
/// the log and trace every statement of it.
///
/// Arguments and the result may be of any type: serde ones (channel ends, mutexes and atomics
/// of ppd are, as handles) are logged as themselves, others by their type and `Debug` form, and
/// a re-execution stops at those, naming them. Methods need `#[ppd::eblocks]` on their `impl`
/// block.
#[proc_macro_attribute]
pub fn eblock(args: TokenStream, item: TokenStream) -> TokenStream {
    eblock::expand_fn(&args.into(), item.into()).into()
}

/// Marks an `impl` block whose methods marked `#[ppd::eblock]` are e-blocks.
#[proc_macro_attribute]
pub fn eblocks(args: TokenStream, item: TokenStream) -> TokenStream {
    eblock::expand_impl(&args.into(), item.into()).into()
}

/// Keeps `ppd build`'s automatic e-blocks off a function, or off every method of an `impl`
/// block: a function called so often that logging each call costs too much, or one whose values
/// nobody will ask about. The item is left exactly as written; `ppd why` on its variables says
/// it is not traced.
#[proc_macro_attribute]
pub fn not_traced(args: TokenStream, item: TokenStream) -> TokenStream {
    if args.is_empty() {
        return item;
    }
    let args = proc_macro2::TokenStream::from(args);
    let mut out: TokenStream =
        syn::Error::new_spanned(args, "#[ppd::not_traced] takes no arguments")
            .to_compile_error()
            .into();
    out.extend(item);
    out
}

/// Marks the program's entry point. Before the body runs, the runtime reads the environment
/// `ppd record` / `ppd replay` set and picks pass-through, record or replay mode; after it, the
/// logs are closed and the manifest completed. The body, and each closure written in it as a
/// `spawn`'s argument, is compiled twice, as written and traced, so that `ppd why` can explain
/// their variables with no annotation.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(entry::Entry::Main, &args.into(), item.into()).into()
}

/// Makes a function a test (it puts `#[test]` on it) that `ppd record` can record: run the
/// test binary under `ppd record` with the test's name and `--exact`, and the one test it runs
/// is the recorded program, its body logical process `main`; `ppd replay` runs the same
/// command line. Outside a recording it is a plain `#[test]`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(entry::Entry::Test, &args.into(), item.into()).into()
}
