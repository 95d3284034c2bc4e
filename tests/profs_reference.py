"""Brute-force PROFS tuples, written from the paper's text only (an independent reference).

Paper: "Deep Metric Learning with Alternating Projections onto Feasible Sets" (PROFS).

* Eq. 4.2 / 4.6: in a projection step every loss term is a pair (k_l, j) whose first member is
  the class representative k_l; y_{k_l,j}=1 terms are positives, y_{k_l,j}=0 terms negatives.
  So the anchor of every mined tuple is a representative, and any batch item of another class
  (a representative included) may serve as its negative.
* Eq. 4.7 / Algorithm 1: batches are built from representatives R' and examples E, "e.g. pairs
  (i_r, j_n)"; pairs between two non-representatives are not part of T_k.
* Section 5.3 (C-/T-/M-PROFS): "we sample one negative pair for each positive pair" and "each
  class representative should have the same number of its corresponding positive pairs and hard
  negative pairs": a representative's positives are all other items of its class; it gets as
  many hard negatives (most similar items of other classes) as positives, min(#pos, #neg) when
  negatives run short. Pairing (the suite's convention): k-th least similar positive with the
  k-th most similar negative; ties broken by the lower batch index first.
* Section 5.3 (L-PROFS, MS-PROFS): "ignoring the pairwise terms between the non-representative
  samples": the pair (i, j), i != j, is kept iff i or j is a representative.
"""

from collections import Counter

import numpy as np


def mined_pairs(similarity, labels, is_representative):
    """(anchor, positive, negative) triplets; the anchor is always a representative."""
    n = len(labels)
    triplets = []
    for a in range(n):
        if not is_representative[a]:
            continue
        positives = [j for j in range(n) if j != a and labels[j] == labels[a]]
        negatives = [j for j in range(n) if labels[j] != labels[a]]
        # least similar positive first, most similar negative first; lower index wins ties
        positives.sort(key=lambda j: (similarity[a][j], j))
        negatives.sort(key=lambda j: (-similarity[a][j], j))
        for k in range(min(len(positives), len(negatives))):
            triplets.append((a, positives[k], negatives[k]))
    return triplets


def pair_multisets(triplets):
    """(Counter of (anchor, positive) pairs, Counter of (anchor, negative) pairs)."""
    positive_pairs = Counter((a, p) for a, p, _ in triplets)
    negative_pairs = Counter((a, q) for a, _, q in triplets)
    return positive_pairs, negative_pairs


def representative_pair_mask(labels, is_representative):
    """True at (i, j), i != j, iff the pair touches a representative (both labels kept)."""
    n = len(labels)
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            if i != j and (is_representative[i] or is_representative[j]):
                mask[i, j] = True
    return mask


def test_reference_counts_on_a_hand_batch():
    # Classes 0,1,2 = items 0-3, 4-7, 8-11; representatives 0, 4, 8. Only the representatives'
    # rows matter for mining; every other entry is 0. Rows agree on S[0,4], S[0,8], S[4,8].
    rows = {  # item:  0     1     2     3     4     5     6     7     8     9    10    11
        0: [1.0, 0.9, 0.5, 0.7, 0.1, 0.8, 0.2, 0.6, 0.3, 0.6, 0.0, -0.4],
        4: [0.1, 0.4, 0.4, -0.1, 1.0, 0.3, 0.3, 0.95, 0.55, 0.2, 0.7, 0.0],
        8: [0.3, 0.85, -0.2, 0.1, 0.55, 0.5, 0.5, 0.2, 1.0, 0.6, 0.2, 0.6],
    }
    s = np.zeros((12, 12))
    for r, row in rows.items():
        s[r, :] = row
        s[:, r] = row
    assert np.array_equal(s, s.T)
    labels = [0] * 4 + [1] * 4 + [2] * 4
    reps = [i in rows for i in range(12)]
    # By hand. rep 0: positives by rising similarity 2 (.5), 3 (.7), 1 (.9); negatives by falling
    #   similarity 5 (.8), 7 (.6), 9 (.6, loses the tie to 7) -> (0,2,5) (0,3,7) (0,1,9).
    # rep 4: positives 5 (.3), 6 (.3, tie -> after 5), 7 (.95); negatives 10 (.7), 8 (.55, a
    #   representative), 1 (.4, beats 2 on the tie) -> (4,5,10) (4,6,8) (4,7,1).
    # rep 8: positives 10 (.2), 9 (.6), 11 (.6); negatives 1 (.85), 4 (.55), 5 (.5, beats 6)
    #   -> (8,10,1) (8,9,4) (8,11,5).  3 positives and 3 hard negatives each: 9 triplets.
    expected = [(0, 2, 5), (0, 3, 7), (0, 1, 9), (4, 5, 10), (4, 6, 8), (4, 7, 1), (8, 10, 1), (8, 9, 4), (8, 11, 5)]
    triplets = mined_pairs(s, labels, reps)
    assert sorted(triplets) == sorted(expected)
    pos, neg = pair_multisets(triplets)
    assert sum(pos.values()) == sum(neg.values()) == 9
    assert set(pos) == {(0, 1), (0, 2), (0, 3), (4, 5), (4, 6), (4, 7), (8, 9), (8, 10), (8, 11)}
    assert {q for (a, q) in neg if a == 0} == {5, 7, 9}
    assert {q for (a, q) in neg if a == 4} == {10, 8, 1}
    assert {q for (a, q) in neg if a == 8} == {1, 4, 5}
    # Sub-batch 0..4: rep 0 has 3 positives but only 1 negative (item 4) -> min(3, 1) = 1 triplet
    # with its least similar positive 2; rep 4 has no positive -> nothing.
    idx = [0, 1, 2, 3, 4]
    assert mined_pairs(s[np.ix_(idx, idx)], labels[:5], reps[:5]) == [(0, 2, 4)]
    # Mask: 12*11 = 132 ordered pairs, minus 9*8 = 72 between non-representatives -> 60 kept.
    mask = representative_pair_mask(labels, reps)
    assert mask.sum() == 60 and np.array_equal(mask, mask.T) and not mask.diagonal().any()
    assert mask[0, 5] and mask[5, 0] and mask[4, 8] and mask[1, 8]
    assert not mask[1, 2] and not mask[5, 9] and not mask[11, 10]
