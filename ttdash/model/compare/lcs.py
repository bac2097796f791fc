"""The exact weighted longest common subsequence of two short op sequences: the aligner's
answer for small segments and its polish (:mod:`ttdash.model.compare.align`). numpy only."""

from __future__ import annotations

import numpy as np

SIG_WEIGHT = 3  # a same-signature pair is worth three same-op-code-only pairs in the small DP
ATTR_WEIGHT = 2  # a same-attributes pair (other shapes or dtypes) two


def weighted_lcs(asig: np.ndarray, acode: np.ndarray, bsig: np.ndarray, bcode: np.ndarray,
                 aattr: np.ndarray | None = None, battr: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact weighted LCS: pairs need the same op code; the same signature scores SIG_WEIGHT,
    else the same attribute id (when given) ATTR_WEIGHT, the op code alone 1. Returns matched
    positions (increasing) and the score. O(n * m) cells, one numpy pass per row of A: for small
    segments only.

    Computed on the reversed sequences so that the traceback, which keeps the first match it
    can, prefers early positions: among equally good alignments, the k-th repeated op of A goes
    with the k-th of B, as the prefix trimming and the anchors do.
    """
    n, m = len(asig), len(bsig)
    empty = np.zeros(0, np.int64)
    if n == 0 or m == 0:
        return empty, empty, 0
    attrs = aattr is not None and battr is not None
    aat = np.asarray(aattr if attrs else asig)
    bat = np.asarray(battr if attrs else bsig)

    def weights(sig_eq: np.ndarray, attr_eq: np.ndarray) -> np.ndarray:
        return np.where(sig_eq, SIG_WEIGHT, np.where(attr_eq & attrs, ATTR_WEIGHT, 1))

    if n == 1 or m == 1:  # one op on one side: its best partner, first on ties
        if n == 1:
            hits = np.flatnonzero(bcode == acode[0])
            if not len(hits):
                return empty, empty, 0
            w = weights(bsig[hits] == asig[0], bat[hits] == aat[0])
            k = int(np.argmax(w))
            return np.array([0]), np.array([int(hits[k])]), int(w[k])
        hits = np.flatnonzero(acode == bcode[0])
        if not len(hits):
            return empty, empty, 0
        w = weights(asig[hits] == bsig[0], aat[hits] == bat[0])
        k = int(np.argmax(w))
        return np.array([int(hits[k])]), np.array([0]), int(w[k])
    rs, rc, ra = asig[::-1], acode[::-1], aat[::-1]
    qs, qc, qa = bsig[::-1], bcode[::-1], bat[::-1]
    score = np.zeros((n + 1, m + 1), dtype=np.int32)
    hit_cache: dict[int, np.ndarray] = {}
    w_cache: dict[tuple[int, int, int], np.ndarray] = {}
    rc_l, rs_l, ra_l = rc.tolist(), rs.tolist(), ra.tolist()
    for i in range(n):
        c, sg, at = rc_l[i], rs_l[i], ra_l[i]
        hits = hit_cache.get(c)
        if hits is None:
            hits = hit_cache[c] = np.flatnonzero(qc == c)
        prev, row = score[i], score[i + 1]
        row[:] = prev
        if len(hits):
            w = w_cache.get((c, sg, at))
            if w is None:
                w = w_cache[(c, sg, at)] = weights(qs[hits] == sg,
                                                   qa[hits] == at).astype(np.int32)
            row[hits + 1] = np.maximum(prev[hits + 1], prev[hits] + w)
            np.maximum.accumulate(row, out=row)
    # Traceback from the end: a diagonal step when it explains the score, else up, else left.
    qc_l, qs_l, qa_l = qc.tolist(), qs.tolist(), qa.tolist()
    out_a, out_b = [], []
    i, j = n, m
    while i > 0 and j > 0:
        v = score.item(i, j)
        if v == 0:
            break
        if rc_l[i - 1] == qc_l[j - 1]:
            w = (SIG_WEIGHT if rs_l[i - 1] == qs_l[j - 1] else
                 ATTR_WEIGHT if attrs and ra_l[i - 1] == qa_l[j - 1] else 1)
            if v == score.item(i - 1, j - 1) + w:
                out_a.append(n - i)  # reversed position i - 1 is n - i in A
                out_b.append(m - j)
                i, j = i - 1, j - 1
                continue
        if v == score.item(i - 1, j):
            i -= 1
        else:
            j -= 1
    return (np.array(out_a, dtype=np.int64), np.array(out_b, dtype=np.int64),
            int(score.item(n, m)))
