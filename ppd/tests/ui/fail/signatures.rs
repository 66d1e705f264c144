//! Every problem of a signature is reported, each at its place.

#[ppd::eblock]
async fn fetch(n: u32) -> u32 {
    n
}

#[ppd::eblock]
fn generic<T: Clone>(value: T) -> T {
    value
}

#[ppd::eblock]
fn destructured((a, b): (u32, u32)) -> u32 {
    a + b
}

#[ppd::eblock]
fn opaque(values: impl Iterator<Item = u32>) -> impl Iterator<Item = u32> {
    values
}

#[ppd::eblock]
fn borrowed(text: &String) -> &str {
    text
}

#[ppd::eblock]
fn unsized_output(text: &mut str) {
    let _ = text;
}

#[ppd::eblock(verbose)]
fn with_arguments(n: u32) -> u32 {
    n
}

fn main() {}
