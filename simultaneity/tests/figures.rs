//! The sets of §3.2 on small graphs, checked against sets worked out by hand: the paper's
//! Fig. 2 (PRE) and Fig. 3 (POST1 and POST2, where the two find different interactions), and
//! a branch and a loop for Reach, Dom, PDom, StatsAlongPaths and PathExists.

use expect_test::{Expect, expect};
use ppd_simultaneity::{Analysis, Bits, Dcfg, Kind};

/// A graph from lines `P: a b c` (a path of process P from its start through a, b, c to its
/// end; a process may have several paths, sharing nodes by name) and `S -> R` (a message).
/// Names starting with `S` are sends, with `R` receives, others statements.
fn graph(input: &str) -> Dcfg {
    let mut g = Dcfg::new();
    for line in input.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some((s, r)) = line.split_once("->") {
            let (s, r) = (g.find(s.trim()).unwrap(), g.find(r.trim()).unwrap());
            g.message(s, r).unwrap();
            continue;
        }
        let (name, path) = line.split_once(':').unwrap();
        let p = match g.processes.iter().position(|p| p.name == name.trim()) {
            Some(p) => p,
            None => g.process(name.trim()),
        };
        let mut nodes = vec![g.processes[p].start];
        for label in path.split_whitespace() {
            let kind = match label.as_bytes()[0] {
                b'S' => Kind::Send,
                b'R' => Kind::Recv,
                _ => Kind::Stmt,
            };
            nodes.push(g.find(label).unwrap_or_else(|| g.node(p, kind, label)));
        }
        nodes.push(g.processes[p].stop);
        g.chain(&nodes).unwrap();
    }
    g
}

fn names(g: &Dcfg, set: &Bits) -> String {
    let v: Vec<&str> = set.iter().map(|n| g.nodes[n].label.as_str()).collect();
    format!("{{{}}}", v.join(", "))
}

/// Renders the sets `which` asks for (`pre`, `post`, `dom`) of every node that has them.
fn check(input: &str, which: &str, expect: Expect) {
    let g = graph(input);
    let a = Analysis::new(&g);
    let mut out = String::new();
    for (n, node) in g.nodes.iter().enumerate() {
        let comm = node.kind != Kind::Stmt;
        let line = match which {
            "pre" if comm => format!("PRE({}) = {}", node.label, names(&g, &a.pre[n])),
            "post" if comm => format!(
                "POST1({l}) = {}  POST2({l}) = {}",
                names(&g, &a.post1[n]),
                names(&g, &a.post2[n]),
                l = node.label
            ),
            "dom" => format!(
                "{}: Reach {}  Dom {}  PDom {}",
                node.label,
                names(&g, &a.reach[n]),
                names(&g, &a.dom[n]),
                names(&g, &a.pdom[n])
            ),
            _ => continue,
        };
        out.push_str(&line);
        out.push('\n');
    }
    expect.assert_eq(&out);
}

#[test]
fn fig2_pre_sets_follow_chains_that_visit_each_process_once() {
    // P1 sends S1 to P2 and then waits at R2; P2 receives it at R1 and sends S2 back to P1 and
    // S3 on to P3. S1 reaches R3 through P2; PRE(R2) leaves out P1's own S1.
    check(
        "
        P1: S1 R2
        P2: R1 S2 S3
        P3: R3
        S1 -> R1
        S2 -> R2
        S3 -> R3
        ",
        "pre",
        expect![[r#"
            PRE(S1) = {S1}
            PRE(R2) = {S2}
            PRE(R1) = {S1}
            PRE(S2) = {S1, S2}
            PRE(S3) = {S1, S3}
            PRE(R3) = {S1, S3}
        "#]],
    );
}

#[test]
fn fig3_post1_and_post2_find_different_guaranteed_interactions() {
    // S1 -> R1 ~> S3 -> R3: S1 is the only send to R1 and S3 postdominates R1, so S1 is in
    // POST1(R3). R3 has a second sender, S4, so no guarantee flows backwards from R3, and R3
    // is not in POST2(S1).
    check(
        "
        P1: S1
        P2: R1 S3
        P3: R3
        P4: S4
        S1 -> R1
        S3 -> R3
        S4 -> R3
        ",
        "post",
        expect![[r#"
            POST1(S1) = {S1}  POST2(S1) = {R1}
            POST1(R1) = {S1}  POST2(R1) = {R1}
            POST1(S3) = {S1, S3}  POST2(S3) = {}
            POST1(R3) = {S1, S3, S4}  POST2(R3) = {R3}
            POST1(S4) = {S4}  POST2(S4) = {}
        "#]],
    );
}

#[test]
fn a_receive_after_a_branch_postdominates_only_what_joins_it() {
    // P: start, then a or b, then R, then a loop through c back to R.
    check(
        "
        P: a R
        P: b R
        P: R c R
        ",
        "dom",
        expect![[r#"
            P.start: Reach {P.stop, a, R, b, c}  Dom {P.start}  PDom {P.start, P.stop, R}
            P.stop: Reach {}  Dom {P.start, P.stop, R}  PDom {P.stop}
            a: Reach {P.stop, R, c}  Dom {P.start, a}  PDom {P.stop, a, R}
            R: Reach {P.stop, R, c}  Dom {P.start, R}  PDom {P.stop, R}
            b: Reach {P.stop, R, c}  Dom {P.start, b}  PDom {P.stop, R, b}
            c: Reach {P.stop, R, c}  Dom {P.start, R, c}  PDom {P.stop, R, c}
        "#]],
    );
}

#[test]
fn path_exists_orders_receives_that_one_path_can_visit() {
    let g = graph(
        "
        P: R1 R2 p
        P: R3 p
        ",
    );
    let a = Analysis::new(&g);
    let n = |l| g.find(l).unwrap();
    let path = a.path_exists(&g, n("p"), &[n("R2"), n("R1")]).unwrap();
    let labels: Vec<&str> = path.iter().map(|&m| g.nodes[m].label.as_str()).collect();
    assert_eq!(labels, ["P.start", "R1", "R2", "p"]);
    assert!(
        a.path_exists(&g, n("p"), &[n("R1"), n("R3")]).is_none(),
        "R1 and R3 lie on different branches"
    );
    let along = a.stats_along_paths(n("R1"), n("p"));
    assert_eq!(names(&g, &along), "{R1, R2, p}");
    assert!(a.counts.pre_steps == 0 && a.counts.nodes == 6);
}

#[test]
fn worklists_stay_within_the_bound_of_section_3_2_5() {
    // A ring of four processes, each receiving from the one before and sending to the next.
    let mut text = String::new();
    for i in 0..4 {
        text.push_str(&format!("P{i}: R{i} S{i}\n"));
    }
    for i in 0..4 {
        text.push_str(&format!("S{i} -> R{}\n", (i + 1) % 4));
    }
    let g = graph(&text);
    let a = Analysis::new(&g);
    let c = a.counts;
    for steps in [c.pre_steps, c.post1_steps, c.post2_steps] {
        assert!(
            steps <= c.sends * c.edges,
            "{steps} > {} × {}",
            c.sends,
            c.edges
        );
    }
    // Each send reaches every other process's receive once around the ring.
    assert_eq!(names(&g, &a.pre[g.find("R0").unwrap()]), "{S1, S2, S3}");
}

/// Whether every execution of `after` follows `before`, as the chain that says so.
fn order(input: &str, before: &str, after: &str) -> String {
    let g = graph(input);
    let a = Analysis::new(&g);
    match a.ordered(g.find(before).unwrap(), g.find(after).unwrap()) {
        Some(o) => format!(
            "{} -> {} => {} -> {}",
            g.nodes[o.before].label,
            g.nodes[o.send].label,
            g.nodes[o.recv].label,
            g.nodes[o.after].label
        ),
        None => "unordered".to_owned(),
    }
}

#[test]
fn an_acknowledgement_orders_two_critical_sections() {
    // left leaves its section (cl), sends S1; right waits for it at R1 before its own (cr).
    let ack = "
        left: cl S1
        right: R1 cr
        S1 -> R1
    ";
    assert_eq!(order(ack, "cl", "cr"), "cl -> S1 => R1 -> cr");
    assert_eq!(order(ack, "cr", "cl"), "unordered");
}

#[test]
fn a_message_nothing_waits_for_before_the_section_orders_nothing() {
    // right's section comes before its receive, so the message cannot hold it back.
    let overlap = "
        left: cl S1
        right: cr R1
        S1 -> R1
    ";
    assert_eq!(order(overlap, "cl", "cr"), "unordered");
}

#[test]
fn a_section_in_a_loop_or_a_receive_with_two_senders_orders_nothing() {
    let looped = "
        left: cl S1 cl
        right: R1 cr
        S1 -> R1
    ";
    assert_eq!(
        order(looped, "cl", "cr"),
        "unordered",
        "a later cl may follow cr"
    );
    let shared = "
        left: cl S1
        other: S2
        right: R1 cr
        S1 -> R1
        S2 -> R1
    ";
    assert_eq!(
        order(shared, "cl", "cr"),
        "unordered",
        "R1 may get other's message"
    );
    let relayed = "
        left: cl S1
        mid: R1 S2
        right: R2 cr
        S1 -> R1
        S2 -> R2
    ";
    assert_eq!(order(relayed, "cl", "cr"), "cl -> S1 => R2 -> cr");
}
