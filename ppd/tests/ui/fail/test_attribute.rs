#[ppd::test]
async fn an_async_test() {}

#[ppd::test]
fn takes_an_argument(n: u32) {
    let _ = n;
}

#[ppd::test]
fn generic<T>() {}

#[ppd::test]
#[test]
fn twice() {}

#[ppd::test(threads = 2)]
fn with_arguments() {}

#[ppd::test]
struct NotAFunction;

fn main() {}
