//! Every way of passing a value an e-block accepts: this program compiles, and runs.

use ppd::sync::mpsc::{Receiver, Sender, channel};
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
struct Account {
    balance: i64,
}

#[ppd::eblock]
fn by_value(n: u32, name: String) -> String {
    format!("{name}{n}")
}

#[ppd::eblock]
fn by_reference(text: &str, items: &[i64], account: &Account) -> i64 {
    text.len() as i64 + items.iter().sum::<i64>() + account.balance
}

#[ppd::eblock]
fn by_mutable_reference<'a>(account: &'a mut Account, log: &mut Vec<String>) {
    account.balance += 1;
    log.push("deposit".into());
}

#[ppd::eblock]
fn with_channels(input: &Receiver<i64>, output: &Sender<i64>) -> bool {
    match input.try_recv() {
        Ok(v) => output.send(v + 1).is_ok(),
        Err(_) => false,
    }
}

#[ppd::eblocks]
impl Account {
    #[ppd::eblock]
    fn open(balance: i64) -> Self {
        Account { balance }
    }

    #[ppd::eblock]
    fn deposit(&mut self, amount: i64) -> i64 {
        self.balance += amount;
        self.balance
    }

    #[ppd::eblock]
    fn balance(&self) -> i64 {
        self.balance
    }

    fn not_an_eblock(&self) -> i64 {
        self.balance
    }
}

/// Neither serde nor `Debug`: logged by its type's name.
struct Opaque(u8);

/// `Debug` only: logged by its `Debug` form.
#[derive(Debug)]
struct Handle(u8);

#[ppd::eblock]
fn not_serde(opaque: Opaque, handle: &mut Handle, rc: std::rc::Rc<u8>) -> Handle {
    handle.0 += opaque.0;
    Handle(handle.0 + *rc)
}

#[ppd::main]
fn main() {
    let mut handle = Handle(1);
    assert_eq!(not_serde(Opaque(2), &mut handle, std::rc::Rc::new(4)).0, 7);
    assert_eq!(handle.0, 3);
    let mut account = Account::open(5);
    account.deposit(2);
    let mut log = Vec::new();
    by_mutable_reference(&mut account, &mut log);
    let (tx, rx) = channel();
    let (out, _keep) = channel();
    tx.send(1).unwrap();
    with_channels(&rx, &out);
    let _ = (
        by_value(1, "a".into()),
        by_reference("xy", &[1, 2], &account),
        account.balance(),
        account.not_an_eblock(),
    );
}
