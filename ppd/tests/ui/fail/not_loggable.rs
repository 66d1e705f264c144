struct Connection;

#[ppd::eblock]
fn serve(connection: Connection, retries: u32) -> u32 {
    let _ = connection;
    retries
}

fn main() {}
