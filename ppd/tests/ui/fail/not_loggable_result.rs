struct Reply;

#[ppd::eblock]
fn answer(n: u32) -> Reply {
    let _ = n;
    Reply
}

fn main() {}
