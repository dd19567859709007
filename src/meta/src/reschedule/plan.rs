//! A reschedule plan: its text form (`'3-[1,2]+[5]; 4+[6]'`, docs/design.md §6)
//! and the check that it moves no-shuffle groups together.

use ebbflow_common::ErrorKind;
use std::collections::{BTreeMap, HashMap};

use crate::cluster::UnitId;
use crate::fragment::Edge;
use crate::graph::EdgeSpec;
use crate::{MetaError, MetaResult};
use ebbflow_stream::message::FragmentId;

/// Units to remove from and add to one fragment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FragmentChange {
    pub remove: Vec<UnitId>,
    pub add: Vec<UnitId>,
}

pub(super) fn units_text(ch: &FragmentChange) -> String {
    let fmt = |v: &[UnitId]| {
        v.iter()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match (ch.remove.is_empty(), ch.add.is_empty()) {
        (false, false) => format!("-[{}]+[{}]", fmt(&ch.remove), fmt(&ch.add)),
        (false, true) => format!("-[{}]", fmt(&ch.remove)),
        (true, false) => format!("+[{}]", fmt(&ch.add)),
        (true, true) => String::new(),
    }
}

/// Parse `'3-[1,2]+[5]; 4+[6]'` (docs/design.md §6).
pub fn parse_plan(text: &str) -> MetaResult<BTreeMap<FragmentId, FragmentChange>> {
    let bad = |m: String| {
        MetaError::new(
            ErrorKind::SyntaxError,
            format!("invalid reschedule plan: {m}"),
        )
    };
    let mut plan = BTreeMap::new();
    for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let digits: String = item.chars().take_while(|c| c.is_ascii_digit()).collect();
        let fid: FragmentId = digits
            .parse()
            .map_err(|_| bad(format!("\"{item}\" does not start with a fragment id")))?;
        let mut rest = item[digits.len()..].trim();
        let mut change = FragmentChange::default();
        while !rest.is_empty() {
            let sign = rest.as_bytes()[0];
            let body = rest[1..].trim_start();
            if !(sign == b'-' || sign == b'+') || !body.starts_with('[') {
                return Err(bad(format!("expected -[units] or +[units] in \"{item}\"")));
            }
            let end = body
                .find(']')
                .ok_or_else(|| bad(format!("missing ] in \"{item}\"")))?;
            let units: Vec<UnitId> = body[1..end]
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().map_err(|_| bad(format!("bad unit id \"{s}\""))))
                .collect::<MetaResult<_>>()?;
            if sign == b'-' {
                change.remove.extend(units);
            } else {
                change.add.extend(units);
            }
            rest = body[end + 1..].trim_start();
        }
        if plan.insert(fid, change).is_some() {
            return Err(bad(format!("fragment {fid} appears twice")));
        }
    }
    if plan.is_empty() {
        return Err(bad("it is empty".into()));
    }
    Ok(plan)
}

/// Fragments joined by no-shuffle edges share their actors' placement and
/// vnodes one to one, so they are rescheduled as one group: every member in
/// the plan with the same change, or none. Returns why `plan` splits a
/// group, naming it.
pub fn splits_no_shuffle_group(
    edges: &[Edge],
    plan: &BTreeMap<FragmentId, FragmentChange>,
) -> Option<String> {
    // union-find over the no-shuffle edges
    let mut parent: HashMap<FragmentId, FragmentId> = HashMap::new();
    fn root(parent: &mut HashMap<FragmentId, FragmentId>, f: FragmentId) -> FragmentId {
        let mut r = f;
        while let Some(&p) = parent.get(&r) {
            if p == r {
                break;
            }
            r = p;
        }
        parent.insert(f, r);
        r
    }
    for e in edges.iter().filter(|e| e.spec == EdgeSpec::NoShuffle) {
        let (a, b) = (root(&mut parent, e.up), root(&mut parent, e.down));
        if a != b {
            parent.insert(a, b);
        }
    }
    let members: Vec<FragmentId> = parent.keys().copied().collect();
    let mut groups: BTreeMap<FragmentId, Vec<FragmentId>> = BTreeMap::new();
    for f in members {
        let r = root(&mut parent, f);
        groups.entry(r).or_default().push(f);
    }
    for mut group in groups.into_values() {
        group.sort_unstable();
        let changes: Vec<Option<&FragmentChange>> = group.iter().map(|f| plan.get(f)).collect();
        if changes.iter().all(Option::is_none) {
            continue;
        }
        let same = |a: &FragmentChange, b: &FragmentChange| {
            let sorted = |v: &[UnitId]| {
                let mut v = v.to_vec();
                v.sort_unstable();
                v
            };
            sorted(&a.add) == sorted(&b.add) && sorted(&a.remove) == sorted(&b.remove)
        };
        let first = changes.iter().flatten().next();
        let split = match first {
            Some(first) => changes.iter().any(|c| !c.is_some_and(|c| same(c, first))),
            None => false,
        };
        if split {
            let names: Vec<String> = group.iter().map(|f| f.to_string()).collect();
            return Some(format!(
                "fragments {} form a no-shuffle group and must be rescheduled together, with the same change for each",
                names.join(", ")
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(up: FragmentId, down: FragmentId, spec: EdgeSpec) -> Edge {
        Edge {
            up,
            down,
            input_index: 0,
            spec,
        }
    }

    fn change(remove: &[UnitId], add: &[UnitId]) -> FragmentChange {
        FragmentChange {
            remove: remove.to_vec(),
            add: add.to_vec(),
        }
    }

    #[test]
    fn no_shuffle_groups_move_together() {
        let edges = vec![
            edge(1, 2, EdgeSpec::NoShuffle),
            edge(2, 3, EdgeSpec::NoShuffle),
            edge(3, 4, EdgeSpec::Hash(vec![0])),
        ];
        // 4 is not in the group: alone is fine
        let plan = BTreeMap::from([(4, change(&[0], &[1]))]);
        assert_eq!(splits_no_shuffle_group(&edges, &plan), None);
        // the whole group with one change is fine
        let plan = BTreeMap::from([
            (1, change(&[0], &[5])),
            (2, change(&[0], &[5])),
            (3, change(&[0], &[5])),
        ]);
        assert_eq!(splits_no_shuffle_group(&edges, &plan), None);
        // a member left out
        let plan = BTreeMap::from([(1, change(&[0], &[5])), (3, change(&[0], &[5]))]);
        let msg = splits_no_shuffle_group(&edges, &plan).expect("refused");
        assert!(
            msg.contains("fragments 1, 2, 3 form a no-shuffle group"),
            "{msg}"
        );
        // members with different changes
        let plan = BTreeMap::from([
            (1, change(&[0], &[5])),
            (2, change(&[0], &[6])),
            (3, change(&[0], &[5])),
        ]);
        assert!(splits_no_shuffle_group(&edges, &plan).is_some());
    }
}
