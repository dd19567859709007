//! The scale planner: new vnode mappings with minimal movement.
//!
//! Going from actors `A` to actors `A - removed + added`, every actor ends
//! with ⌊256/n⌋ or ⌈256/n⌉ vnodes; survivors keep as many of their current
//! vnodes as that allows (the ones with most vnodes get the ⌈⌉ shares), so
//! 3 → 4 actors moves exactly 64 vnodes and 4 → 3 moves 64. Vnodes that
//! must move go to an actor on the same compute node as their previous
//! owner whenever one has room: a vnode changes node only when its node
//! cannot take it.

use std::collections::BTreeMap;

use ebbflow_common::{Bitmap, VirtualNode, VNODE_COUNT};
use ebbflow_stream::compute_node::WorkerId;
use ebbflow_stream::message::ActorId;

/// One actor of a fragment and where it runs.
#[derive(Clone, Debug)]
pub struct Owner {
    pub actor: ActorId,
    pub worker: WorkerId,
    pub vnodes: Bitmap,
}

/// The new bitmaps of the survivors and the added actors (in the order
/// given), and how many vnodes changed owner.
pub fn rebalance(
    old: &[Owner],
    removed: &[ActorId],
    added: &[(ActorId, WorkerId)],
) -> (Vec<(ActorId, Bitmap)>, usize) {
    let survivors: Vec<&Owner> = old.iter().filter(|o| !removed.contains(&o.actor)).collect();
    let n = survivors.len() + added.len();
    if n == 0 {
        return (vec![], 0);
    }
    let base = VNODE_COUNT / n;
    let extra = VNODE_COUNT % n;
    // Survivors with the most vnodes get the larger shares first.
    let mut order: Vec<usize> = (0..survivors.len()).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(survivors[i].vnodes.count()),
            survivors[i].actor,
        )
    });
    let mut target = vec![base; n];
    for (rank, &i) in order.iter().enumerate() {
        if rank < extra {
            target[i] = base + 1;
        }
    }
    for k in 0..added.len() {
        let rank = survivors.len() + k;
        if rank < extra {
            target[survivors.len() + k] = base + 1;
        }
    }
    // Keep, then pool the rest (remembering the previous owner's worker).
    let mut kept: Vec<Vec<VirtualNode>> = Vec::with_capacity(n);
    let mut pool: Vec<(VirtualNode, WorkerId)> = Vec::new();
    for (i, s) in survivors.iter().enumerate() {
        let mine: Vec<VirtualNode> = s.vnodes.iter().collect();
        let keep = target[i].min(mine.len());
        kept.push(mine[..keep].to_vec());
        pool.extend(mine[keep..].iter().map(|v| (*v, s.worker)));
    }
    for o in old.iter().filter(|o| removed.contains(&o.actor)) {
        pool.extend(o.vnodes.iter().map(|v| (v, o.worker)));
    }
    for _ in added {
        kept.push(Vec::new());
    }
    let workers: Vec<WorkerId> = survivors
        .iter()
        .map(|s| s.worker)
        .chain(added.iter().map(|a| a.1))
        .collect();
    // Vnodes owned by nobody (a fresh fragment) also go to the pool.
    let mut owned = Bitmap::empty();
    for o in old {
        for v in o.vnodes.iter() {
            owned.set(v, true);
        }
    }
    for v in 0..VNODE_COUNT as VirtualNode {
        if !owned.contains(v) {
            pool.push((v, WorkerId::MAX));
        }
    }
    let moved = pool.len();
    // Group the pool by previous worker so same-node moves are found first.
    let mut by_worker: BTreeMap<WorkerId, Vec<VirtualNode>> = BTreeMap::new();
    for (v, w) in pool {
        by_worker.entry(w).or_default().push(v);
    }
    // First every actor takes what it can from its own node, then the rest
    // is spread: a vnode changes node only when its node has no room.
    for i in 0..n {
        if let Some(own) = by_worker.get_mut(&workers[i]) {
            while kept[i].len() < target[i] {
                match own.pop() {
                    Some(v) => kept[i].push(v),
                    None => break,
                }
            }
        }
    }
    for i in 0..n {
        while kept[i].len() < target[i] {
            let Some(v) = by_worker.values_mut().find_map(|v| v.pop()) else {
                break;
            };
            kept[i].push(v);
        }
    }
    let ids = survivors
        .iter()
        .map(|s| s.actor)
        .chain(added.iter().map(|a| a.0));
    let result = ids
        .zip(kept)
        .map(|(a, v)| (a, Bitmap::from_vnodes(v)))
        .collect();
    (result, moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragment::even_bitmaps;

    fn owners(n: usize) -> Vec<Owner> {
        even_bitmaps(n)
            .into_iter()
            .enumerate()
            .map(|(i, b)| Owner {
                actor: i as ActorId + 1,
                worker: (i % 2) as WorkerId + 1,
                vnodes: b,
            })
            .collect()
    }

    fn check_balanced(result: &[(ActorId, Bitmap)]) {
        let n = result.len();
        let mut all = Bitmap::empty();
        for (_, b) in result {
            let c = b.count();
            assert!(
                c == VNODE_COUNT / n || c == VNODE_COUNT.div_ceil(n),
                "unbalanced: {c}"
            );
            for v in b.iter() {
                assert!(!all.contains(v), "vnode {v} owned twice");
                all.set(v, true);
            }
        }
        assert_eq!(all.count(), VNODE_COUNT);
    }

    #[test]
    fn three_to_four_moves_64() {
        let (r, moved) = rebalance(&owners(3), &[], &[(9, 1)]);
        check_balanced(&r);
        assert_eq!(moved, 64);
    }

    #[test]
    fn four_to_three_moves_64() {
        let (r, moved) = rebalance(&owners(4), &[2], &[]);
        check_balanced(&r);
        assert_eq!(moved, 64);
    }

    #[test]
    fn migration_moves_only_the_moved_actor() {
        let (r, moved) = rebalance(&owners(4), &[3], &[(9, 1)]);
        check_balanced(&r);
        assert_eq!(moved, 64);
        let old = owners(4);
        assert_eq!(
            r.iter().find(|x| x.0 == 9).map(|x| x.1.clone()),
            Some(old[2].vnodes.clone())
        );
    }

    #[test]
    fn new_actors_take_vnodes_from_their_own_node() {
        // actors 1 (node 1) and 2 (node 2); one new actor on each node
        let old = owners(2);
        let (r, moved) = rebalance(&old, &[], &[(9, 1), (10, 2)]);
        check_balanced(&r);
        assert_eq!(moved, 128);
        let of = |a: ActorId| r.iter().find(|x| x.0 == a).map(|x| x.1.clone());
        for (new, old_owner) in [(9, &old[0]), (10, &old[1])] {
            let b = of(new).unwrap_or_default();
            assert!(
                b.iter().all(|v| old_owner.vnodes.contains(v)),
                "actor {new} got vnodes from another node"
            );
        }
    }

    #[test]
    fn removed_vnodes_stay_on_their_node_when_it_has_room() {
        // A (node 3), B (node 1), C (node 1), D (node 2); C and D go
        let old: Vec<Owner> = even_bitmaps(4)
            .into_iter()
            .enumerate()
            .map(|(i, b)| Owner {
                actor: i as ActorId + 1,
                worker: [3, 1, 1, 2][i],
                vnodes: b,
            })
            .collect();
        let (r, moved) = rebalance(&old, &[3, 4], &[]);
        check_balanced(&r);
        assert_eq!(moved, 128);
        // B takes C's vnodes (same node) although A is served first; only
        // D's vnodes change node
        let b = r
            .iter()
            .find(|x| x.0 == 2)
            .map(|x| x.1.clone())
            .unwrap_or_default();
        assert!(old[2].vnodes.iter().all(|v| b.contains(v)));
    }

    #[test]
    fn random_sequences_stay_balanced_and_minimal() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut cur = owners(2);
        let mut next_id = 100;
        for _ in 0..200 {
            let n = cur.len();
            let remove: Vec<ActorId> = cur
                .iter()
                .filter(|_| n > 1 && rng.gen_bool(0.2))
                .map(|o| o.actor)
                .take(n - 1)
                .collect();
            let add: Vec<(ActorId, WorkerId)> = (0..rng.gen_range(0..3))
                .map(|_| {
                    next_id += 1;
                    (next_id, rng.gen_range(1..4))
                })
                .collect();
            if remove.len() == n && add.is_empty() {
                continue;
            }
            let (r, moved) = rebalance(&cur, &remove, &add);
            check_balanced(&r);
            // Lower bound of movement: vnodes of removed actors plus what
            // survivors above their share must give up.
            let m = r.len();
            let lower: usize = cur
                .iter()
                .map(|o| {
                    if remove.contains(&o.actor) {
                        o.vnodes.count()
                    } else {
                        o.vnodes.count().saturating_sub(VNODE_COUNT.div_ceil(m))
                    }
                })
                .sum();
            assert!(moved >= lower);
            assert!(moved <= lower + m, "moved {moved}, lower bound {lower}");
            let workers: BTreeMap<ActorId, WorkerId> = cur
                .iter()
                .map(|o| (o.actor, o.worker))
                .chain(add.iter().copied())
                .collect();
            cur = r
                .into_iter()
                .map(|(a, b)| Owner {
                    actor: a,
                    worker: workers[&a],
                    vnodes: b,
                })
                .collect();
        }
    }
}
