struct Counter {
    n: u32,
}

impl Counter {
    #[ppd::eblock]
    fn bump(&mut self) -> u32 {
        self.n += 1;
        self.n
    }
}

fn main() {}
