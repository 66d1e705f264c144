#[ppd::eblock]
struct NotAFunction;

#[derive(Default)]
struct Pair<T>(T, T);

#[ppd::eblocks]
impl<T> Pair<T> {
    #[ppd::eblock]
    fn first(&self) -> u32 {
        0
    }
}

fn main() {}
