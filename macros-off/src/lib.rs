//! `#[ppd::main]`, `#[ppd::test]`, `#[ppd::eblock]`, `#[ppd::eblocks]` and `#[ppd::not_traced]` for a build of `ppd` without its
//! `record` feature: each leaves the item exactly as written, so the program is the plain std
//! program and carries no ppd code. No parsing, hence no dependencies.

#![deny(missing_docs)]

use proc_macro::TokenStream;

/// Leaves `fn main` as it is.
#[proc_macro_attribute]
pub fn main(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Makes the function a plain `#[test]`.
#[proc_macro_attribute]
pub fn test(_args: TokenStream, item: TokenStream) -> TokenStream {
    let mut test: TokenStream = "#[test]".parse().expect("`#[test]` is an attribute");
    test.extend(item);
    test
}

/// Leaves the function as it is.
#[proc_macro_attribute]
pub fn eblock(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Leaves the `impl` block as it is (its `#[ppd::eblock]` methods are left as they are too).
#[proc_macro_attribute]
pub fn eblocks(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Leaves the item as it is.
#[proc_macro_attribute]
pub fn not_traced(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
