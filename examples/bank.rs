//! `bank`: four clients (`client-0` … `client-3`) send deposits and withdrawals to a `teller`,
//! which keeps the accounts (each with a `balance`); an `auditor` asks for the total now and
//! then.
//!
//! The intermittent bug is a check-then-act across two messages: a client first asks the
//! teller whether a withdrawal is covered, thinks for a moment, then sends the withdrawal. Two
//! clients share each account, so when both check before either withdraws, both are approved
//! and the balance goes negative. Whether that happens depends on how the messages interleave:
//! in some runs it does (the program then exits with code 1), in others not.
//!
//! The teller serves each request in an e-block (`serve`, which calls `handle`), and each
//! client operation is one (`operate`), so `ppd why` can re-execute any of them from the log.
//!
//! Try: `ppd record -- cargo run --example bank`, then
//! `ppd replay --stop 'teller: mark negative'` or `ppd why teller balance`.

use std::process::ExitCode;

use ppd::sync::mpsc::{Receiver, Sender, channel, named_channel};
use serde::{Deserialize, Serialize};

const CLIENTS: usize = 4;
const ACCOUNTS: usize = 2;
/// Operations per client, unless the first argument says otherwise.
const OPERATIONS: usize = 12;
const AUDITS: usize = 3;
const OPENING_BALANCE: i64 = 100;

/// What the teller is asked.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Request {
    /// Is `amount` covered by the account's balance?
    Check {
        client: usize,
        account: usize,
        amount: i64,
    },
    /// Take `amount` out (the client checked before).
    Withdraw {
        client: usize,
        account: usize,
        amount: i64,
    },
    /// Put `amount` in.
    Deposit {
        client: usize,
        account: usize,
        amount: i64,
    },
    /// The sum of all balances, please.
    Audit,
    /// This client is done.
    Done { client: usize },
}

/// What the teller answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Reply {
    Approved(bool),
    Balance(i64),
    Total(i64),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Account {
    owner: String,
    balance: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Bank {
    accounts: Vec<Account>,
    went_negative: bool,
    clients_left: usize,
}

impl Bank {
    fn open() -> Bank {
        let accounts = (0..ACCOUNTS)
            .map(|i| Account {
                owner: format!("account-{i}"),
                balance: OPENING_BALANCE,
            })
            .collect();
        Bank {
            accounts,
            went_negative: false,
            clients_left: CLIENTS,
        }
    }
}

/// Handles one request: the teller's whole job. Returns who to answer and what.
#[ppd::eblock]
fn handle(bank: &mut Bank, request: Request) -> (Option<usize>, Reply) {
    match request {
        Request::Check {
            client,
            account,
            amount,
        } => {
            let balance = bank.accounts[account].balance;
            let covered = balance >= amount;
            (Some(client), Reply::Approved(covered))
        }
        Request::Withdraw {
            client,
            account,
            amount,
        } => {
            // The bug: no second check here; the client checked earlier.
            let balance = bank.accounts[account].balance - amount;
            bank.accounts[account].balance = balance;
            if balance < 0 {
                bank.went_negative = true;
                ppd::mark!("negative", balance);
            }
            (Some(client), Reply::Balance(balance))
        }
        Request::Deposit {
            client,
            account,
            amount,
        } => {
            let balance = bank.accounts[account].balance + amount;
            bank.accounts[account].balance = balance;
            (Some(client), Reply::Balance(balance))
        }
        Request::Audit => {
            let total = bank.accounts.iter().map(|a| a.balance).sum();
            (None, Reply::Total(total))
        }
        Request::Done { client } => (Some(client), Reply::Balance(0)),
    }
}

/// Serves one request; false when the last client is done.
#[ppd::eblock]
fn serve(
    bank: &mut Bank,
    requests: &Receiver<Request>,
    to_clients: &[Sender<Reply>],
    to_auditor: &Sender<Reply>,
) -> bool {
    let Ok(request) = requests.recv() else {
        return false;
    };
    if let Request::Done { .. } = request {
        bank.clients_left -= 1;
        return bank.clients_left > 0;
    }
    match handle(bank, request) {
        (Some(client), reply) => to_clients[client].send(reply).expect("client"),
        (None, reply) => {
            let _ = to_auditor.send(reply);
        }
    }
    true
}

fn teller(
    requests: Receiver<Request>,
    to_clients: Vec<Sender<Reply>>,
    to_auditor: Sender<Reply>,
) -> bool {
    let mut bank = Bank::open();
    while serve(&mut bank, &requests, &to_clients, &to_auditor) {}
    for account in &bank.accounts {
        println!("{}: balance {}", account.owner, account.balance);
    }
    bank.went_negative
}

/// One deposit, or one checked withdrawal, by client `id`.
#[ppd::eblock]
fn operate(id: usize, account: usize, teller: &Sender<Request>, replies: &Receiver<Reply>) {
    let amount = ppd::rand::i64(10..=60);
    if ppd::rand::u32(0..4) == 0 {
        teller
            .send(Request::Deposit {
                client: id,
                account,
                amount,
            })
            .expect("teller");
        replies.recv().expect("teller");
        return;
    }
    teller
        .send(Request::Check {
            client: id,
            account,
            amount,
        })
        .expect("teller");
    let Ok(Reply::Approved(true)) = replies.recv() else {
        return;
    };
    // Thinking it over; meanwhile the other client of the account may withdraw.
    ppd::thread::sleep(std::time::Duration::from_micros(ppd::rand::u64(0..400)));
    teller
        .send(Request::Withdraw {
            client: id,
            account,
            amount,
        })
        .expect("teller");
    replies.recv().expect("teller");
}

fn client(id: usize, operations: usize, teller: Sender<Request>, replies: Receiver<Reply>) {
    let account = id % ACCOUNTS;
    for _ in 0..operations {
        operate(id, account, &teller, &replies);
    }
    teller.send(Request::Done { client: id }).expect("teller");
}

fn auditor(teller: Sender<Request>, replies: Receiver<Reply>) {
    for _ in 0..AUDITS {
        ppd::thread::sleep(std::time::Duration::from_millis(1));
        if teller.send(Request::Audit).is_err() {
            return;
        }
        match replies.recv() {
            Ok(Reply::Total(total)) => ppd::mark!("total", total),
            _ => return,
        }
    }
}

#[ppd::main]
fn main() -> ExitCode {
    let operations = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(OPERATIONS);
    let (to_teller, requests) = named_channel("requests");
    let mut to_clients = Vec::new();
    let mut client_inboxes = Vec::new();
    for _ in 0..CLIENTS {
        let (tx, rx) = channel();
        to_clients.push(tx);
        client_inboxes.push(rx);
    }
    let (to_auditor, auditor_inbox) = channel();

    let teller_handle = ppd::thread::Builder::new()
        .name("teller".into())
        .spawn(move || teller(requests, to_clients, to_auditor))
        .expect("spawn teller");
    let auditor_to_teller = to_teller.clone();
    let auditor_handle = ppd::thread::Builder::new()
        .name("auditor".into())
        .spawn(move || auditor(auditor_to_teller, auditor_inbox))
        .expect("spawn auditor");
    let clients: Vec<_> = client_inboxes
        .into_iter()
        .enumerate()
        .map(|(id, inbox)| {
            let to_teller = to_teller.clone();
            ppd::thread::Builder::new()
                .name(format!("client-{id}"))
                .spawn(move || client(id, operations, to_teller, inbox))
                .expect("spawn client")
        })
        .collect();
    drop(to_teller);
    for c in clients {
        c.join().expect("client");
    }
    let went_negative = teller_handle.join().expect("teller");
    auditor_handle.join().expect("auditor");
    if went_negative {
        println!("a balance went negative");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
