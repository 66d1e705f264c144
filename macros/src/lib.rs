//! Attributes of ppd: `#[ppd::main]` selects the runtime mode before the program's body runs.
//!
//! Each attribute is split into parsing (syntax into a model), checking (every error collected
//! with its span, never a panic) and expansion.

mod main_attr;

use proc_macro::TokenStream;

/// Marks the program's entry point. Before the body runs, the runtime reads the environment
/// `ppd record` / `ppd replay` set and picks pass-through, record or replay mode; after it, the
/// logs are closed and the manifest completed.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    main_attr::expand(&args.into(), item.into()).into()
}
