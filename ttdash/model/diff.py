"""Compare two traces: ops aligned, per-op, per-op-code and per-region deltas, noise labels.

Pure pandas/numpy (never imports Textual). Entry point: :func:`diff_traces`.

Alignment
---------
The op sequences (signposts excluded) are aligned as sequences, never by row index, so added,
removed, fused and locally reordered ops and traces of different lengths are handled.

1. **Regions.** When both views have signposts, the runs of ops between signposts are keyed by
   (signpost name, occurrence) and the two run sequences are aligned; each paired region becomes
   one segment aligned on its own, and the ops of unpaired regions lying between two pairs form
   one more segment. Otherwise the whole window is one segment.
2. **Ops.** Every op gets an integer *signature* id (op code + each input's W/Z/Y/X + each input's
   dtype; the values are factorised by pandas over both traces) and an *op code* id. A segment is
   aligned by, in order:

   a. trimming the common prefix and suffix of signatures (numpy, O(n));
   b. when it is small (``la * lb <= DP_CELLS``): an exact weighted longest common subsequence,
      computed row by row with numpy; a pair with the same signature scores ``SIG_WEIGHT``, a pair
      with only the same op code scores 1 (the op-code fallback for ops whose shapes changed);
   c. otherwise anchors, then the gaps between anchors recursively (1-by-1 gaps vectorised).
      Candidate pairs come from two generators: (i) for ids occurring equally often on both
      sides, the k-th occurrence in A with the k-th in B (repeated layers align in order);
      (ii) each op of A with the op of B of the same id nearest to where it is expected: first
      with ids of KGRAM consecutive ops (a layer's k-grams recur once per layer, so drift does
      not confuse them) along the segment's diagonal, then with single ids along the line
      through the best anchors so far (robust when scattered edits change every id's count).
      A longest increasing subsequence (patience sorting, O(k log k)) keeps the largest
      consistent subset of each candidate set. Signatures are tried before op codes; the
      largest set wins, and a signature set covering half of the shorter side is taken at once.

   Work: O((n + m) log(n + m)) for the anchoring plus the bounded DP inside small gaps; no
   O(n * m) step over a whole trace.
3. **Polish.** Around every imperfection (a gap, an op-code-only match), a window of
   ``POLISH_WINDOW`` matched ops on each side is re-solved with the exact DP of (b) and the
   better answer kept: an anchor inside a run of identical ops may sit one op off.
4. **Moves.** A leftover removed op and a leftover added op with the same signature, within
   ``MOVE_WINDOW`` positions of where the alignment around them puts it, are paired and marked
   ``moved`` (locally reordered ops, e.g. two adjacent ops swapped).

Multi-device: the given views are compared as they are. When a view is per-device (not merged)
and holds several devices, each device's ops are aligned separately (devices paired by id).

Deltas
------
``delta_us`` is the change of device time: candidate - baseline for matched ops, +candidate for
added ops, -baseline for removed ops, so that the per-op deltas add up to the total device-time
delta. ``delta_pct`` is relative to the baseline op (matched ops only). ``by_op_code`` and
``by_region`` add them up; their ``share_pct`` is the group's delta as a percentage of the total
device-time delta (signed; groups moving against the total make others exceed 100%).

Noise rule
----------
A side has *iterations* when a signpost name repeats (``decode`` x N). For each such name, the
iterations whose op count is the most common one are stacked, and for each op position inside
the iteration (whose op code must agree across iterations) with at least ``NOISE_MIN_SAMPLES``
iterations, the robust relative spread is

    sigma = IQR(device time) / 1.349 / median(device time)

(1.349 * sigma is the IQR of a normal distribution). Every op at that position gets this sigma,
unless it exceeds ``NOISE_MAX_SIGMA`` (25%): then the iterations do different work (growing
inputs, say) rather than repeat the same one, and the position gets no estimate.
A matched op's change is labelled ``within_noise = True`` when

    |delta_pct| <= NOISE_K * 100 * sqrt(sigma_baseline**2 + sigma_candidate**2)

(``noise_pct`` holds the right-hand side). When only one side has a sigma for the op, the other
side is assumed as noisy (sigma used twice). When neither has one, ``within_noise`` is missing
(unknown). Example: 5% relative spread on both sides gives a threshold of about 2 * 7.1% = 14%,
so a 2% change is noise and a 30% change is not. Caveat: a steady drift across iterations (a
growing KV cache) counts as spread.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import TraceError
from .trace import View

STATUS_MATCHED, STATUS_ADDED, STATUS_REMOVED = "matched", "added", "removed"
MATCH_SIGNATURE, MATCH_OP_CODE = "signature", "op_code"

SIG_WEIGHT = 3  # a same-signature pair is worth three same-op-code-only pairs in the small DP
DP_CELLS = 2_000_000  # exact weighted LCS below this many cells (la * lb)
KGRAM = 3  # ops of context in the first-round ids of the nearest pairing
REFINE_ROUNDS = 3  # re-pairings guided by the anchors found so far
POLISH_WINDOW = 16  # matched ops of context re-solved on each side of an imperfection
MOVE_WINDOW = 8  # positions around the expected place where a moved op is looked for
NOISE_MIN_SAMPLES = 3  # iterations needed for a spread estimate
NOISE_K = 2.0  # threshold in combined robust sigmas
NOISE_MAX_SIGMA = 0.25  # above this, the "iterations" do different work: no estimate
IQR_TO_SIGMA = 1.349

NO_SIGNPOST_LABEL = "(before first signpost)"

PAIR_COLUMNS = (
    "baseline_id", "candidate_id", "op_code", "size", "status", "baseline_us", "candidate_us",
    "delta_us", "delta_pct", "baseline_gap_us", "candidate_gap_us", "gap_delta_us",
    "baseline_bound", "candidate_bound", "region", "device", "match", "moved", "within_noise",
    "noise_pct", "baseline_pos", "candidate_pos",
)
GROUP_COLUMNS = ("baseline_count", "candidate_count", "baseline_us", "candidate_us", "delta_us",
                 "delta_pct", "share_pct", "baseline_gap_us", "candidate_gap_us")


# ==================================================================== alignment on int arrays

@dataclass
class Alignment:
    """Matched positions of two sequences: ``a[i]`` pairs with ``b[i]``.

    Sorted by ``a``; ``b`` increases too except for ``moved`` pairs.
    """

    a: np.ndarray
    b: np.ndarray
    moved: np.ndarray

    @property
    def size(self) -> int:
        return int(len(self.a))


def _lis(x: np.ndarray) -> np.ndarray:
    """Indices of one longest strictly increasing subsequence of ``x`` (patience sorting)."""
    n = len(x)
    if n < 2 or bool(np.all(x[1:] > x[:-1])):
        return np.arange(n)
    vals = x.tolist()
    tails: list[int] = []  # smallest tail value of an increasing run of each length
    tail_idx: list[int] = []
    prev = [-1] * n
    for i, v in enumerate(vals):
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
            tail_idx.append(i)
        else:
            tails[k] = v
            tail_idx[k] = i
        prev[i] = tail_idx[k - 1] if k else -1
    out = []
    i = tail_idx[-1]
    while i >= 0:
        out.append(i)
        i = prev[i]
    return np.array(out[::-1], dtype=np.int64)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + l) for each (s, l), vectorised."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offs + np.arange(total)


def _occurrence_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate anchors: for each value occurring equally often on both sides, its k-th
    occurrence in ``a`` with its k-th occurrence in ``b``. Sorted by position in ``a``."""
    sa = np.argsort(a, kind="stable")
    sb = np.argsort(b, kind="stable")
    ka, start_a, ca = np.unique(a[sa], return_index=True, return_counts=True)
    kb, start_b, cb = np.unique(b[sb], return_index=True, return_counts=True)
    _, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    keep = ca[ia] == cb[ib]
    ia, ib = ia[keep], ib[keep]
    if not len(ia):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pa = sa[_ranges(start_a[ia], ca[ia])]
    pb = sb[_ranges(start_b[ib], cb[ib])]
    order = np.argsort(pa, kind="stable")
    return pa[order], pb[order]


def _nearest_pairs(a: np.ndarray, b: np.ndarray, guide: tuple[np.ndarray, np.ndarray] | None
                   = None) -> tuple[np.ndarray, np.ndarray]:
    """Candidate anchors: each op of ``a`` with the op of ``b`` of the same value nearest to
    where it is expected: on the segment's diagonal, or interpolated through ``guide`` pairs."""
    la, lb = len(a), len(b)
    sb = np.argsort(b, kind="stable")
    bv = b[sb]
    key_b = bv.astype(np.float64) * (lb + 1) + sb
    if guide is not None and len(guide[0]) >= 2:
        expected = np.interp(np.arange(la), guide[0], guide[1])
    else:
        expected = np.arange(la) * (lb / la)
    key_a = a.astype(np.float64) * (lb + 1) + expected
    lo = np.searchsorted(bv, a, side="left")
    hi = np.searchsorted(bv, a, side="right")
    has = hi > lo
    k = np.clip(np.searchsorted(key_b, key_a), lo, np.maximum(hi - 1, lo))
    prev = np.maximum(k - 1, lo)
    kk = np.minimum(k, len(sb) - 1)
    pp = np.minimum(prev, len(sb) - 1)
    d_next = np.abs(sb[kk] - expected)
    d_prev = np.abs(sb[pp] - expected)
    pick = np.where(d_prev < d_next, pp, kk)
    pa = np.flatnonzero(has)
    return pa, sb[pick[has]]


class _Aligner:
    """Aligns segments of two sequences given signature ids and op-code ids (int arrays)."""

    def __init__(self, a_sig: np.ndarray, b_sig: np.ndarray, a_code: np.ndarray,
                 b_code: np.ndarray) -> None:
        self.a_sig, self.b_sig = a_sig, b_sig
        self.a_code, self.b_code = a_code, b_code
        self._kgrams: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.out_a: list[np.ndarray] = []
        self.out_b: list[np.ndarray] = []

    # ------------------------------------------------------------ driver
    def run(self, segments: list[tuple[int, int, int, int]]) -> None:
        stack = [s for s in reversed(segments) if s[1] > s[0] and s[3] > s[2]]
        while stack:
            a0, a1, b0, b1 = stack.pop()
            a0, a1, b0, b1 = self._trim(a0, a1, b0, b1)
            la, lb = a1 - a0, b1 - b0
            if la == 0 or lb == 0:
                continue
            if la * lb <= DP_CELLS:
                self._dp(a0, a1, b0, b1)
                continue
            pa, pb = self._anchors(a0, a1, b0, b1)
            if not len(pa):
                continue
            self._emit(pa + a0, pb + b0)
            stack.extend(reversed(self._gaps(pa + a0, pb + b0, a0, a1, b0, b1)))

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.out_a:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        a = np.concatenate(self.out_a).astype(np.int64)
        b = np.concatenate(self.out_b).astype(np.int64)
        order = np.argsort(a, kind="stable")
        return a[order], b[order]

    def _emit(self, a: np.ndarray, b: np.ndarray) -> None:
        if len(a):
            self.out_a.append(np.asarray(a, dtype=np.int64))
            self.out_b.append(np.asarray(b, dtype=np.int64))

    # ------------------------------------------------------------ steps
    def _trim(self, a0: int, a1: int, b0: int, b1: int) -> tuple[int, int, int, int]:
        """Match the common prefix and suffix of signatures; return what is left."""
        n = min(a1 - a0, b1 - b0)
        if n == 0:
            return a0, a1, b0, b1
        eq = self.a_sig[a0:a0 + n] == self.b_sig[b0:b0 + n]
        pre = n if bool(eq.all()) else int(np.argmin(eq))
        if pre:
            self._emit(np.arange(a0, a0 + pre), np.arange(b0, b0 + pre))
            a0, b0, n = a0 + pre, b0 + pre, n - pre
        if n:
            eq = self.a_sig[a1 - n:a1][::-1] == self.b_sig[b1 - n:b1][::-1]
            suf = n if bool(eq.all()) else int(np.argmin(eq))
            if suf:
                self._emit(np.arange(a1 - suf, a1), np.arange(b1 - suf, b1))
                a1, b1 = a1 - suf, b1 - suf
        return a0, a1, b0, b1

    def _kgram(self, level: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids of the KGRAM consecutive ids starting at each op (computed once per level)."""
        if level not in self._kgrams:
            a, b = (self.a_sig, self.b_sig) if level == "sig" else (self.a_code, self.b_code)
            self._kgrams[level] = kgram_ids(a, b, KGRAM)
        return self._kgrams[level]

    def _anchors(self, a0: int, a1: int, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray]:
        """Consistent anchor pairs (segment-local positions) for a large segment.

        For signatures, then op codes: occurrence pairs of equally frequent ids; if they cover
        less than half of the shorter side, nearest-to-the-diagonal pairs of k-gram ids (a
        repeated layer's k-grams recur only once per layer, so drift rarely confuses them),
        then up to REFINE_ROUNDS re-pairings of single ids guided by the best anchors so far.
        Each candidate set is thinned to a longest increasing subsequence; the largest wins.
        """
        empty = np.zeros(0, np.int64)
        best: tuple[np.ndarray, np.ndarray] = (empty, empty)
        enough = min(a1 - a0, b1 - b0) // 2

        def consider(pa: np.ndarray, pb: np.ndarray) -> bool:
            nonlocal best
            if len(pa) <= len(best[0]):
                return False
            keep = _lis(pb)
            if len(keep) <= len(best[0]):
                return False
            best = (pa[keep], pb[keep])
            return True

        for level, ids_a, ids_b in (("sig", self.a_sig, self.b_sig),
                                    ("code", self.a_code, self.b_code)):
            xa, xb = ids_a[a0:a1], ids_b[b0:b1]
            consider(*_occurrence_pairs(xa, xb))
            if len(best[0]) >= enough:
                break
            ka, kb = self._kgram(level)
            consider(*_nearest_pairs(ka[a0:a1], kb[b0:b1]))
            for _ in range(REFINE_ROUNDS):
                if not consider(*_nearest_pairs(xa, xb, best)):
                    break
            if len(best[0]) >= enough:
                break
        return best

    def _gaps(self, pa: np.ndarray, pb: np.ndarray, a0: int, a1: int, b0: int,
              b1: int) -> list[tuple[int, int, int, int]]:
        """The gaps between anchors where both sides have ops; 1-by-1 gaps matched here."""
        ga0 = np.concatenate([[a0], pa + 1])
        ga1 = np.concatenate([pa, [a1]])
        gb0 = np.concatenate([[b0], pb + 1])
        gb1 = np.concatenate([pb, [b1]])
        la, lb = ga1 - ga0, gb1 - gb0
        one = (la == 1) & (lb == 1)
        if one.any():
            same = self.a_code[ga0[one]] == self.b_code[gb0[one]]
            self._emit(ga0[one][same], gb0[one][same])
        rest = (la > 0) & (lb > 0) & ~one
        return list(zip(ga0[rest].tolist(), ga1[rest].tolist(), gb0[rest].tolist(),
                        gb1[rest].tolist()))

    def _dp(self, a0: int, a1: int, b0: int, b1: int) -> None:
        ia, ib, _ = weighted_lcs(self.a_sig[a0:a1], self.a_code[a0:a1], self.b_sig[b0:b1],
                                 self.b_code[b0:b1])
        self._emit(ia + a0, ib + b0)

    # ------------------------------------------------------------ polish
    def polish(self, ma: np.ndarray, mb: np.ndarray,
               segments: list[tuple[int, int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """Re-solve, with the exact DP, a window of POLISH_WINDOW matched ops on each side of
        every imperfection (a gap, an op-code-only match) and keep the better answer.

        Anchors are fixed once chosen; inside runs of identical ops an anchor can sit one op
        off, costing a same-signature match. Windows never cross a segment's edges.
        """
        if not len(ma):
            return ma, mb
        keep = np.ones(len(ma), dtype=bool)
        add_a: list[np.ndarray] = []
        add_b: list[np.ndarray] = []
        starts = np.searchsorted(ma, [s[0] for s in segments])
        ends = np.searchsorted(ma, [s[1] for s in segments])
        for (a0, a1, b0, b1), i0, i1 in zip(segments, starts.tolist(), ends.tolist()):
            # The segment's matches with sentinels at its edges.
            ea = np.concatenate([[a0 - 1], ma[i0:i1], [a1]])
            eb = np.concatenate([[b0 - 1], mb[i0:i1], [b1]])
            w = np.zeros(len(ea), dtype=np.int64)
            inner = slice(1, len(ea) - 1)
            same = self.a_sig[ea[inner]] == self.b_sig[eb[inner]]
            w[inner] = np.where(same, SIG_WEIGHT, 1)
            gap = np.flatnonzero((np.diff(ea) > 1) | (np.diff(eb) > 1))  # between k and k+1
            weak = np.flatnonzero(w[inner] != SIG_WEIGHT) + 1
            if not len(gap) and not len(weak):
                continue
            lo = np.concatenate([gap - POLISH_WINDOW + 1, weak - POLISH_WINDOW])
            hi = np.concatenate([gap + POLISH_WINDOW, weak + POLISH_WINDOW])
            lo, hi = np.clip(lo, 0, len(ea) - 1), np.clip(hi, 0, len(ea) - 1)
            order = np.argsort(lo, kind="stable")
            lo, hi = lo[order], hi[order]
            reach = np.maximum.accumulate(hi)
            new = np.concatenate([[True], lo[1:] >= reach[:-1]])  # interiors do not overlap
            glo = lo[new]
            ghi = np.maximum.reduceat(hi, np.flatnonzero(new))
            cum = np.concatenate([[0], np.cumsum(w)])
            for lo_k, h in zip(glo.tolist(), ghi.tolist()):
                ra0, ra1 = int(ea[lo_k]) + 1, int(ea[h])
                rb0, rb1 = int(eb[lo_k]) + 1, int(eb[h])
                if (ra1 - ra0) * (rb1 - rb0) > DP_CELLS or ra1 <= ra0 or rb1 <= rb0:
                    continue
                current = int(cum[h] - cum[lo_k + 1])  # matches strictly inside (lo_k, h)
                ia, ib, score = weighted_lcs(self.a_sig[ra0:ra1], self.a_code[ra0:ra1],
                                             self.b_sig[rb0:rb1], self.b_code[rb0:rb1])
                if score > current:
                    keep[i0 + lo_k:i0 + h - 1] = False  # ea index k = match index i0 + k - 1
                    add_a.append(ia + ra0)
                    add_b.append(ib + rb0)
        if not add_a:
            return ma, mb
        ma = np.concatenate([ma[keep], *add_a])
        mb = np.concatenate([mb[keep], *add_b])
        order = np.argsort(ma, kind="stable")
        return ma[order], mb[order]


def weighted_lcs(asig: np.ndarray, acode: np.ndarray, bsig: np.ndarray, bcode: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact weighted LCS: pairs need the same op code; the same signature scores SIG_WEIGHT,
    the op code alone 1. Returns matched positions (increasing) and the score. O(n * m) cells,
    one numpy pass per row of A: for small segments only.

    Computed on the reversed sequences so that the traceback, which keeps the first match it
    can, prefers early positions: among equally good alignments, the k-th repeated op of A goes
    with the k-th of B, as the prefix trimming and the anchors do.
    """
    n, m = len(asig), len(bsig)
    empty = np.zeros(0, np.int64)
    if n == 0 or m == 0:
        return empty, empty, 0
    if n == 1 or m == 1:  # one op on one side: its best partner, first on ties
        if n == 1:
            hits = np.flatnonzero(bcode == acode[0])
            if not len(hits):
                return empty, empty, 0
            best = int(hits[np.argmax(bsig[hits] == asig[0])])
            return np.array([0]), np.array([best]), SIG_WEIGHT if bsig[best] == asig[0] else 1
        hits = np.flatnonzero(acode == bcode[0])
        if not len(hits):
            return empty, empty, 0
        best = int(hits[np.argmax(asig[hits] == bsig[0])])
        return np.array([best]), np.array([0]), SIG_WEIGHT if asig[best] == bsig[0] else 1
    rs, rc = asig[::-1], acode[::-1]
    qs, qc = bsig[::-1], bcode[::-1]
    score = np.zeros((n + 1, m + 1), dtype=np.int32)
    hit_cache: dict[int, np.ndarray] = {}
    w_cache: dict[tuple[int, int], np.ndarray] = {}
    rc_l, rs_l = rc.tolist(), rs.tolist()
    for i in range(n):
        c, sg = rc_l[i], rs_l[i]
        hits = hit_cache.get(c)
        if hits is None:
            hits = hit_cache[c] = np.flatnonzero(qc == c)
        prev, row = score[i], score[i + 1]
        row[:] = prev
        if len(hits):
            w = w_cache.get((c, sg))
            if w is None:
                w = w_cache[(c, sg)] = np.where(qs[hits] == sg, SIG_WEIGHT, 1).astype(np.int32)
            row[hits + 1] = np.maximum(prev[hits + 1], prev[hits] + w)
            np.maximum.accumulate(row, out=row)
    # Traceback from the end: a diagonal step when it explains the score, else up, else left.
    qc_l, qs_l = qc.tolist(), qs.tolist()
    out_a, out_b = [], []
    i, j = n, m
    while i > 0 and j > 0:
        v = score.item(i, j)
        if v == 0:
            break
        if rc_l[i - 1] == qc_l[j - 1]:
            w = SIG_WEIGHT if rs_l[i - 1] == qs_l[j - 1] else 1
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


def kgram_ids(a: np.ndarray, b: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the k consecutive ids starting at each position (shared id space for a and b).

    The last k - 1 positions of each side use a shorter window (padded with a sentinel)."""
    cols = []
    for s in range(k):
        pa = np.concatenate([a[s:], np.full(min(s, len(a)), -1, np.int64)])
        pb = np.concatenate([b[s:], np.full(min(s, len(b)), -1, np.int64)])
        cols.append(np.concatenate([pa, pb]))
    ids = _factorize_rows(cols)
    return ids[:len(a)], ids[len(a):]


def _segment_ids(segments: list[tuple[int, int, int, int]], la: int, lb: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per op, the index of its segment (-1 / -2 for ops of A / B outside every segment)."""
    sa, sb = np.full(la, -1, np.int64), np.full(lb, -2, np.int64)
    for k, (a0, a1, b0, b1) in enumerate(segments):
        sa[a0:a1] = k
        sb[b0:b1] = k
    return sa, sb


def _find_moves(a_sig: np.ndarray, b_sig: np.ndarray, ma: np.ndarray, mb: np.ndarray,
                a_seg: np.ndarray, b_seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pair leftover removed/added ops of one signature close to where the alignment puts them
    (inside one segment: a move never crosses a signpost region boundary)."""
    la, lb = len(a_sig), len(b_sig)
    rem = np.setdiff1d(np.arange(la), ma, assume_unique=True)
    add = np.setdiff1d(np.arange(lb), mb, assume_unique=True)
    if not len(rem) or not len(add):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(ma):
        k = np.searchsorted(ma, rem) - 1  # last match before each removed op
        expected = np.where(k >= 0, mb[np.maximum(k, 0)] + (rem - ma[np.maximum(k, 0)]), rem)
    else:
        expected = rem
    key_a = _factorize_rows([np.concatenate([a_sig[rem], b_sig[add]]),
                             np.concatenate([a_seg[rem], b_seg[add]])])
    left = pd.DataFrame({"key": key_a[:len(rem)], "expected": expected.astype(np.int64),
                         "a": rem})
    right = pd.DataFrame({"key": key_a[len(rem):], "pos": add.astype(np.int64)})
    left = left.sort_values("expected", kind="stable")
    right = right.sort_values("pos", kind="stable")
    m = pd.merge_asof(left, right, left_on="expected", right_on="pos", by="key",
                      tolerance=MOVE_WINDOW, direction="nearest")
    m = m.dropna(subset=["pos"])
    m = m.drop_duplicates(subset=["pos"], keep="first")
    return m["a"].to_numpy(np.int64), m["pos"].to_numpy(np.int64)


def align_sequences(a_sig: np.ndarray, b_sig: np.ndarray, a_code: np.ndarray | None = None,
                    b_code: np.ndarray | None = None, a_region: np.ndarray | None = None,
                    b_region: np.ndarray | None = None, moves: bool = True) -> Alignment:
    """Align two op sequences given as integer ids.

    ``a_sig``/``b_sig``: signature ids (equal ids = same op); ``a_code``/``b_code``: coarser op
    code ids for the fallback (default: the signatures); ``a_region``/``b_region``: region key ids
    (equal ids = the same signpost region on both sides; default: no region anchoring).
    """
    a_sig = np.asarray(a_sig, dtype=np.int64)
    b_sig = np.asarray(b_sig, dtype=np.int64)
    a_code = a_sig if a_code is None else np.asarray(a_code, dtype=np.int64)
    b_code = b_sig if b_code is None else np.asarray(b_code, dtype=np.int64)
    la, lb = len(a_sig), len(b_sig)
    segments = [(0, la, 0, lb)]
    if a_region is not None and b_region is not None and la and lb:
        segments = _region_segments(np.asarray(a_region, np.int64), np.asarray(b_region, np.int64))
    aligner = _Aligner(a_sig, b_sig, a_code, b_code)
    aligner.run(segments)
    ma, mb = aligner.result()
    ma, mb = aligner.polish(ma, mb, segments)
    moved = np.zeros(len(ma), dtype=bool)
    if moves:
        a_seg, b_seg = _segment_ids(segments, la, lb)
        xa, xb = _find_moves(a_sig, b_sig, ma, mb, a_seg, b_seg)
        if len(xa):
            ma = np.concatenate([ma, xa])
            mb = np.concatenate([mb, xb])
            moved = np.concatenate([moved, np.ones(len(xa), dtype=bool)])
            order = np.argsort(ma, kind="stable")
            ma, mb, moved = ma[order], mb[order], moved[order]
    return Alignment(ma, mb, moved)


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run starts, ends and keys of a key array."""
    if not len(keys):
        return (np.zeros(0, np.int64),) * 3  # type: ignore[return-value]
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(keys)]])
    return starts, ends, keys[starts]


def _region_segments(a_region: np.ndarray, b_region: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Segments from paired region runs and the stretches between pairs."""
    sa, ea, ka = _runs(a_region)
    sb, eb, kb = _runs(b_region)
    runs = _Aligner(ka, kb, ka, kb)
    runs.run([(0, len(ka), 0, len(kb))])
    ra, rb = runs.result()
    segments: list[tuple[int, int, int, int]] = []
    pa_end, pb_end = 0, 0
    for i, j in zip(ra.tolist(), rb.tolist()):
        if sa[i] > pa_end and sb[j] > pb_end:
            segments.append((pa_end, int(sa[i]), pb_end, int(sb[j])))
        segments.append((int(sa[i]), int(ea[i]), int(sb[j]), int(eb[j])))
        pa_end, pb_end = int(ea[i]), int(eb[j])
    segments.append((pa_end, len(a_region), pb_end, len(b_region)))
    return segments


# ==================================================================== op signatures

def _shape_columns(frames: list[pd.DataFrame]) -> list[str]:
    """INPUT_n_{W,Z,Y,X} and INPUT_n_DATATYPE columns of any of the frames, in a fixed order."""
    names: set[str] = set()
    for f in frames:
        for c in f.columns:
            if c.startswith("INPUT_") and (c.endswith(("_W", "_Z", "_Y", "_X", "_DATATYPE"))):
                names.add(c)

    def key(c: str) -> tuple[int, str]:
        part = c.split("_")
        return (int(part[1]) if part[1].isdigit() else 1 << 30, c)

    return sorted(names, key=key)


def _raw_rows(view: View, ops: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The trace's raw columns for the given ops (matched by tt-perf-report ID)."""
    ordered = view.trace.ordered
    pos = pd.Index(ordered["ID"].to_numpy()).get_indexer(ops["id"].to_numpy())
    out = {}
    for c in columns:
        if c in ordered.columns:
            s = ordered[c]
            vals = s.to_numpy(dtype=object) if not pd.api.types.is_float_dtype(s) \
                else s.to_numpy(dtype="float64")
            taken = vals[np.maximum(pos, 0)]
            if len(taken) and (pos < 0).any():
                taken = taken.astype(object)
                taken[pos < 0] = None
            out[c] = taken
        else:
            out[c] = np.full(len(ops), None, dtype=object)
    return pd.DataFrame(out, index=ops.index)


def _factorize_rows(cols: list[np.ndarray]) -> np.ndarray:
    """One dense int id per distinct tuple of column values (missing values compare equal)."""
    acc: np.ndarray | None = None
    for values in cols:
        codes, uniq = pd.factorize(pd.Series(values), use_na_sentinel=True)
        codes = codes.astype(np.int64) + 1
        if acc is None:
            acc = codes
        else:
            acc = pd.factorize(acc * (len(uniq) + 1) + codes)[0].astype(np.int64)
    return acc if acc is not None else np.zeros(0, np.int64)


def signatures(a: View, a_ops: pd.DataFrame, b: View, b_ops: pd.DataFrame
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Signature ids and op code ids of both op tables (ids comparable across the two)."""
    cols = _shape_columns([a.trace.ordered, b.trace.ordered])
    ra, rb = _raw_rows(a, a_ops, cols), _raw_rows(b, b_ops, cols)
    code = pd.concat([a_ops["op_code"], b_ops["op_code"]], ignore_index=True).astype(object)
    code_ids = pd.factorize(code, use_na_sentinel=True)[0].astype(np.int64)
    columns = [code.to_numpy(dtype=object)]
    for c in cols:
        both = np.concatenate([ra[c].to_numpy(), rb[c].to_numpy()])
        columns.append(both)
    sig = _factorize_rows(columns)
    n = len(a_ops)
    return sig[:n], sig[n:], code_ids[:n], code_ids[n:]


# ==================================================================== regions and noise

def _region_keys(view: View, ops: pd.DataFrame) -> pd.Series:
    """Per op: "name\\x1foccurrence" of its signpost region ("" before the first signpost)."""
    sp = view.trace.signposts
    if not len(sp):
        return pd.Series("", index=ops.index, dtype=object)
    key = (sp["name"].astype(str) + "\x1f" + sp["occurrence"].astype(str)).to_numpy(dtype=object)
    table = pd.Series(key, index=sp["index"].to_numpy())
    return ops["region"].map(table).fillna("").astype(object)


def _region_labels(view: View, ops: pd.DataFrame) -> np.ndarray:
    lab = ops["signpost"].astype(object).to_numpy(dtype=object).copy()
    missing = pd.isna(lab)
    lab[missing] = NO_SIGNPOST_LABEL if len(view.trace.signposts) else None
    return lab


def noise_sigma(view: View, ops: pd.DataFrame) -> tuple[np.ndarray, dict[str, int]]:
    """Per op: robust relative spread of its device time across iterations (NaN = unknown).

    Also returns {signpost name: iterations used} for the names that repeat.
    """
    sigma = np.full(len(ops), np.nan)
    sp = view.trace.signposts
    if not len(sp) or not len(ops):
        return sigma, {}
    names = pd.Series(sp["name"].to_numpy(dtype=object), index=sp["index"].to_numpy())
    region = ops["region"].to_numpy()
    df = pd.DataFrame({"region": region, "name": pd.Series(region).map(names).to_numpy(),
                       "t": ops["device_time_us"].to_numpy(dtype="float64"),
                       "code": ops["op_code"].astype(object).to_numpy()})
    df = df[df["name"].notna()]
    if df.empty:
        return sigma, {}
    sizes = df.groupby("region", sort=False).size()
    reg = pd.DataFrame({"n": sizes})
    reg["name"] = reg.index.map(names)
    modal = reg.groupby("name")["n"].agg(lambda s: s.mode().iloc[0])
    reg["keep"] = reg["n"].to_numpy() == reg["name"].map(modal).to_numpy()
    iters = reg[reg["keep"]].groupby("name").size()
    iters = iters[iters >= 2]
    if iters.empty:
        return sigma, {}
    keep_regions = reg.index[reg["keep"].to_numpy() & reg["name"].isin(iters.index).to_numpy()]
    df = df[df["region"].isin(keep_regions)].copy()
    df["pos"] = df.groupby("region", sort=False).cumcount()
    g = df.groupby(["name", "pos"], sort=False)
    stats = pd.DataFrame({
        "n": g["t"].count(),
        "q1": g["t"].quantile(0.25),
        "med": g["t"].median(),
        "q3": g["t"].quantile(0.75),
        "codes": g["code"].nunique(dropna=False),
    })
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = (stats["q3"] - stats["q1"]) / IQR_TO_SIGMA / stats["med"]
    rel = rel.where((stats["n"] >= NOISE_MIN_SAMPLES) & (stats["codes"] == 1)
                    & (stats["med"] > 0) & (rel <= NOISE_MAX_SIGMA))
    idx = pd.MultiIndex.from_arrays([df["name"], df["pos"]])
    vals = rel.reindex(idx).to_numpy(dtype="float64")
    where = ops.index.get_indexer(df.index)
    sigma[where] = vals
    return sigma, {str(k): int(v) for k, v in iters.items()}


# ==================================================================== result

@dataclass(frozen=True)
class SideTotals:
    """Totals of one side (device time and gaps in microseconds)."""

    file: str
    window: str
    ops: int
    device_time_us: float
    op_to_op_us: float
    wall_us: float  # device + gaps
    corrupt_rows: int
    host_ops: int

    def as_dict(self) -> dict:
        return {"file": self.file, "window": self.window, "ops": self.ops,
                "device_time_us": self.device_time_us, "op_to_op_us": self.op_to_op_us,
                "wall_us": self.wall_us, "corrupt_rows": self.corrupt_rows,
                "host_ops": self.host_ops}


def _side_totals(view: View) -> SideTotals:
    t = view.totals()
    return SideTotals(file=str(view.trace.path), window=view.description, ops=t["ops"],
                      device_time_us=t["device_time_us"], op_to_op_us=t["op_to_op_us"],
                      wall_us=t["device_time_us"] + t["op_to_op_us"],
                      corrupt_rows=t["corrupt_rows"], host_ops=t["host_ops"])


def _pct(base: float, cand: float) -> float | None:
    if not np.isfinite(base) or base == 0 or not np.isfinite(cand):
        return None
    return (cand - base) / base * 100.0


def _ratio(base: float, cand: float) -> float | None:
    if not np.isfinite(base) or not np.isfinite(cand) or cand == 0:
        return None
    return base / cand


@dataclass
class DiffResult:
    """The diff of a baseline and a candidate view. See the module docstring for the rules.

    ``pairs``: one row per aligned pair or unmatched op, in alignment order (removed ops of a
    gap before the added ones). Columns: see ``PAIR_COLUMNS``; ``*_pos`` are positions in the
    side's ``View.op_rows`` (for drilling down), ``*_id`` tt-perf-report IDs (CSV lines).
    """

    baseline: View
    candidate: View
    pairs: pd.DataFrame
    baseline_totals: SideTotals
    candidate_totals: SideTotals
    delta_pct: dict[str, float | None]  # device, op_to_op, wall
    speedup: dict[str, float | None]  # baseline / candidate: device, wall
    by_op_code: pd.DataFrame
    by_region: pd.DataFrame
    counts: dict[str, int]  # matched, added, removed, moved, op_code_only, within_noise
    noise: dict = field(default_factory=dict)
    per_device: bool = False
    seconds: dict[str, float] = field(default_factory=dict)  # signatures, align, frame
    top: int = 10

    # ------------------------------------------------------------ top lists
    def regressions(self, n: int | None = None, include_noise: bool = False) -> pd.DataFrame:
        """Matched ops that got slower, largest delta first (ops within noise left out)."""
        p = self._matched(include_noise)
        p = p[p["delta_us"] > 0]
        return p.sort_values("delta_us", ascending=False, kind="stable").head(n or self.top)

    def improvements(self, n: int | None = None, include_noise: bool = False) -> pd.DataFrame:
        """Matched ops that got faster, largest gain first (ops within noise left out)."""
        p = self._matched(include_noise)
        p = p[p["delta_us"] < 0]
        return p.sort_values("delta_us", ascending=True, kind="stable").head(n or self.top)

    def added(self, n: int | None = None) -> pd.DataFrame:
        """Ops only in the candidate, most device time first."""
        p = self.pairs[self.pairs["status"] == STATUS_ADDED]
        return p.sort_values("candidate_us", ascending=False, kind="stable",
                             na_position="last").head(n or self.top)

    def removed(self, n: int | None = None) -> pd.DataFrame:
        """Ops only in the baseline, most device time first."""
        p = self.pairs[self.pairs["status"] == STATUS_REMOVED]
        return p.sort_values("baseline_us", ascending=False, kind="stable",
                             na_position="last").head(n or self.top)

    @property
    def top_regressions(self) -> pd.DataFrame:
        return self.regressions()

    @property
    def top_improvements(self) -> pd.DataFrame:
        return self.improvements()

    def _matched(self, include_noise: bool) -> pd.DataFrame:
        p = self.pairs[self.pairs["status"] == STATUS_MATCHED]
        if not include_noise:
            p = p[~p["within_noise"].fillna(False).astype(bool)]
        return p

    # ------------------------------------------------------------ verdict
    def slower_pct(self, metric: str = "wall") -> float | None:
        """How much slower the candidate is than the baseline on `wall` or `device` (percent)."""
        key = {"wall": "wall", "device": "device", "op_to_op": "op_to_op"}[metric]
        return self.delta_pct.get(key)

    @property
    def match_rate(self) -> float:
        """Matched ops / ops of the longer side (1.0 for a trace against itself)."""
        longest = max(self.baseline_totals.ops, self.candidate_totals.ops)
        return self.counts["matched"] / longest if longest else 1.0


# ==================================================================== the diff

def _device_groups(a_ops: pd.DataFrame, b_ops: pd.DataFrame, per_device: bool
                   ) -> list[tuple[object, np.ndarray, np.ndarray]]:
    if not per_device:
        return [(None, np.arange(len(a_ops)), np.arange(len(b_ops)))]
    da = a_ops["device"].to_numpy(dtype="float64")
    db = b_ops["device"].to_numpy(dtype="float64")
    da = np.where(np.isnan(da), -1.0, da)
    db = np.where(np.isnan(db), -1.0, db)
    out = []
    for d in np.union1d(np.unique(da), np.unique(db)):
        out.append((None if d < 0 else int(d), np.flatnonzero(da == d), np.flatnonzero(db == d)))
    return out


def diff_traces(a: View, b: View, *, noise: bool = True, top: int = 10) -> DiffResult:
    """Align the ops of baseline ``a`` and candidate ``b`` and compute all deltas.

    Raises TraceError when both windows have no ops.
    """
    a_ops = a.op_rows.reset_index(drop=True)
    b_ops = b.op_rows.reset_index(drop=True)
    if not len(a_ops) and not len(b_ops):
        raise TraceError(None, "no ops to compare: both windows are empty")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    a_sig, b_sig, a_code, b_code = signatures(a, a_ops, b, b_ops)
    use_regions = bool(len(a.trace.signposts)) and bool(len(b.trace.signposts))
    if use_regions:
        keys = pd.concat([_region_keys(a, a_ops), _region_keys(b, b_ops)], ignore_index=True)
        rid = pd.factorize(keys)[0].astype(np.int64)
        a_reg, b_reg = rid[:len(a_ops)], rid[len(a_ops):]
    seconds["signatures"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    per_device = (not a.merged or not b.merged) and (
        a_ops["device"].nunique() > 1 or b_ops["device"].nunique() > 1)
    parts_a, parts_b, parts_moved, parts_dev = [], [], [], []
    for dev, ia, ib in _device_groups(a_ops, b_ops, per_device):
        al = align_sequences(a_sig[ia], b_sig[ib], a_code[ia], b_code[ib],
                             a_reg[ia] if use_regions else None,
                             b_reg[ib] if use_regions else None)
        parts_a.append(ia[al.a])
        parts_b.append(ib[al.b])
        parts_moved.append(al.moved)
        parts_dev.append(dev)
    seconds["align"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    ma = np.concatenate(parts_a) if parts_a else np.zeros(0, np.int64)
    mb = np.concatenate(parts_b) if parts_b else np.zeros(0, np.int64)
    moved = np.concatenate(parts_moved) if parts_moved else np.zeros(0, bool)

    sig_a, sig_b = np.full(len(a_ops), np.nan), np.full(len(b_ops), np.nan)
    iterations: dict[str, dict[str, int]] = {"baseline": {}, "candidate": {}}
    if noise:
        sig_a, iterations["baseline"] = noise_sigma(a, a_ops)
        sig_b, iterations["candidate"] = noise_sigma(b, b_ops)

    pairs = _pairs_frame(a, b, a_ops, b_ops, ma, mb, moved, a_sig, b_sig, sig_a, sig_b,
                         per_device)
    bt, ct = _side_totals(a), _side_totals(b)
    delta = {"device": _pct(bt.device_time_us, ct.device_time_us),
             "op_to_op": _pct(bt.op_to_op_us, ct.op_to_op_us),
             "wall": _pct(bt.wall_us, ct.wall_us)}
    speed = {"device": _ratio(bt.device_time_us, ct.device_time_us),
             "wall": _ratio(bt.wall_us, ct.wall_us)}
    total_delta = float(np.nansum(pairs["delta_us"].to_numpy(dtype="float64")))
    by_code = _group(pairs, "op_code", total_delta)
    by_code = by_code.reindex(by_code["delta_us"].abs().sort_values(
        ascending=False, kind="stable").index).reset_index(drop=True)
    by_region = (_group(pairs, "region", total_delta).reset_index(drop=True)
                 if (len(a.trace.signposts) or len(b.trace.signposts)) else
                 pd.DataFrame(columns=["region", *GROUP_COLUMNS]))
    status = pairs["status"].to_numpy(dtype=object)
    wn = pairs["within_noise"]
    counts = {
        "matched": int((status == STATUS_MATCHED).sum()),
        "added": int((status == STATUS_ADDED).sum()),
        "removed": int((status == STATUS_REMOVED).sum()),
        "moved": int(moved.sum()),
        "op_code_only": int((pairs["match"] == MATCH_OP_CODE).sum()),
        "within_noise": int(wn.fillna(False).astype(bool).sum()),
        "noise_known": int(wn.notna().sum()),
    }
    noise_info = {"enabled": noise, "rule": f"|delta_pct| <= {NOISE_K:g} * 100 * "
                  "sqrt(sigma_a^2 + sigma_b^2), sigma = IQR / 1.349 / median across iterations",
                  "iterations": iterations}
    seconds["frame"] = time.perf_counter() - t0
    return DiffResult(baseline=a, candidate=b, pairs=pairs, baseline_totals=bt,
                      candidate_totals=ct, delta_pct=delta, speedup=speed, by_op_code=by_code,
                      by_region=by_region, counts=counts, noise=noise_info,
                      per_device=per_device, seconds=seconds, top=top)


def _pairs_frame(a: View, b: View, a_ops: pd.DataFrame, b_ops: pd.DataFrame, ma: np.ndarray,
                 mb: np.ndarray, moved: np.ndarray, a_sig: np.ndarray, b_sig: np.ndarray,
                 sig_a: np.ndarray, sig_b: np.ndarray, per_device: bool) -> pd.DataFrame:
    na, nb = len(a_ops), len(b_ops)
    rem = np.setdiff1d(np.arange(na), ma, assume_unique=True)
    add = np.setdiff1d(np.arange(nb), mb, assume_unique=True)
    # Order: matched and removed ops at their baseline position; an added op just before the
    # next (unmoved) matched pair after it, so a gap reads "removed ..., added ...".
    order_a = ma[~moved]
    order_b = mb[~moved]
    nxt = np.searchsorted(order_b, add)
    anchor = np.where(nxt < len(order_a), order_a[np.minimum(nxt, len(order_a) - 1)]
                      if len(order_a) else na, na).astype("float64") - 0.5
    key = np.concatenate([ma.astype("float64"), rem.astype("float64"), anchor])
    sub = np.concatenate([np.zeros(len(ma)), np.zeros(len(rem)), add.astype("float64")])
    apos = np.concatenate([ma, rem, np.full(len(add), -1)]).astype(np.int64)
    bpos = np.concatenate([mb, np.full(len(rem), -1), add]).astype(np.int64)
    status = np.array([STATUS_MATCHED] * len(ma) + [STATUS_REMOVED] * len(rem)
                      + [STATUS_ADDED] * len(add), dtype=object)
    mv = np.concatenate([moved, np.zeros(len(rem) + len(add), bool)])
    order = np.lexsort((sub, key))
    apos, bpos, status, mv = apos[order], bpos[order], status[order], mv[order]
    ha, hb = apos >= 0, bpos >= 0
    sa, sb = np.maximum(apos, 0), np.maximum(bpos, 0)

    def take(ops: pd.DataFrame, col: str, pos: np.ndarray, has: np.ndarray,
             numeric: bool) -> np.ndarray:
        if numeric:
            v = ops[col].to_numpy(dtype="float64") if len(ops) else np.zeros(0)
            out = v[pos] if len(v) else np.full(len(pos), np.nan)
            return np.where(has, out, np.nan)
        v = ops[col].astype(object).to_numpy(dtype=object) if len(ops) else np.zeros(0, object)
        out = v[pos] if len(v) else np.full(len(pos), None, dtype=object)
        out = out.copy()
        out[~has] = None
        return out

    b_us = take(a_ops, "device_time_us", sa, ha, True)
    c_us = take(b_ops, "device_time_us", sb, hb, True)
    b_gap = take(a_ops, "op_to_op_us", sa, ha, True)
    c_gap = take(b_ops, "op_to_op_us", sb, hb, True)
    matched = ha & hb
    delta = np.where(matched, c_us - b_us, np.where(ha, -b_us, c_us))
    gap_delta = np.where(matched, c_gap - b_gap, np.where(ha, -b_gap, c_gap))
    with np.errstate(invalid="ignore", divide="ignore"):
        delta_pct = np.where(matched & (b_us > 0), (c_us - b_us) / b_us * 100.0, np.nan)

    code = np.where(ha, take(a_ops, "op_code", sa, ha, False), take(b_ops, "op_code", sb, hb,
                                                                    False))
    region_a = _region_labels(a, a_ops)
    region_b = _region_labels(b, b_ops)
    region = np.where(ha, region_a[sa] if na else None, region_b[sb] if nb else None)
    match = np.full(len(apos), "", dtype=object)
    if na and nb:
        same_sig = matched & (a_sig[sa] == b_sig[sb])
        match[matched] = MATCH_OP_CODE
        match[same_sig] = MATCH_SIGNATURE

    # Noise: sigmas of both sides, one side standing in for a missing other.
    s_a = np.where(ha, sig_a[sa] if na else np.nan, np.nan)
    s_b = np.where(hb, sig_b[sb] if nb else np.nan, np.nan)
    s_a2 = np.where(np.isnan(s_a), s_b, s_a)
    s_b2 = np.where(np.isnan(s_b), s_a, s_b)
    noise_pct = np.where(matched, NOISE_K * 100.0 * np.sqrt(s_a2 ** 2 + s_b2 ** 2), np.nan)
    known = matched & ~np.isnan(noise_pct) & ~np.isnan(delta_pct)
    within = pd.array(np.abs(np.nan_to_num(delta_pct)) <= np.nan_to_num(noise_pct),
                      dtype="boolean")
    within[~known] = pd.NA

    dev = take(a_ops, "device", sa, ha, True) if na else np.full(len(apos), np.nan)
    if nb:
        dev = np.where(ha, dev, take(b_ops, "device", sb, hb, True))
    frame = pd.DataFrame({
        "baseline_id": _nullable_int(take(a_ops, "id", sa, ha, True), ha),
        "candidate_id": _nullable_int(take(b_ops, "id", sb, hb, True), hb),
        "op_code": code,
        "size": _blank_none(np.where(ha, take(a_ops, "size", sa, ha, False),
                                     take(b_ops, "size", sb, hb, False))),
        "status": status,
        "baseline_us": b_us,
        "candidate_us": c_us,
        "delta_us": delta,
        "delta_pct": delta_pct,
        "baseline_gap_us": b_gap,
        "candidate_gap_us": c_gap,
        "gap_delta_us": gap_delta,
        "baseline_bound": _blank_none(take(a_ops, "bound", sa, ha, False)),
        "candidate_bound": _blank_none(take(b_ops, "bound", sb, hb, False)),
        "region": region,
        "device": _nullable_int(dev, np.ones(len(apos), bool)) if per_device
        else pd.array([pd.NA] * len(apos), dtype="Int64"),
        "match": match,
        "moved": mv,
        "within_noise": within,
        "noise_pct": noise_pct,
        "baseline_pos": _nullable_int(apos.astype("float64"), ha),
        "candidate_pos": _nullable_int(bpos.astype("float64"), hb),
    })
    return frame


def _nullable_int(vals: np.ndarray, has: np.ndarray) -> pd.arrays.IntegerArray:
    ok = has & ~np.isnan(vals)
    arr = pd.array(np.where(ok, np.round(np.nan_to_num(vals)), 0).astype(np.int64), dtype="Int64")
    arr[~ok] = pd.NA
    return arr


def _blank_none(v: np.ndarray) -> np.ndarray:
    out = v.copy()
    out[pd.isna(out) | (out == "")] = None
    return out


def _group(pairs: pd.DataFrame, by: str, total_delta: float) -> pd.DataFrame:
    """Counts and times per op code / region; `share_pct` of the total device-time delta."""
    key = pairs[by].astype(object).where(pairs[by].notna(), "")
    g = pairs.groupby(key.to_numpy(), sort=False, dropna=False)
    out = pd.DataFrame({
        "baseline_count": g["baseline_pos"].count(),
        "candidate_count": g["candidate_pos"].count(),
        "baseline_us": g["baseline_us"].sum(),
        "candidate_us": g["candidate_us"].sum(),
        "baseline_gap_us": g["baseline_gap_us"].sum(),
        "candidate_gap_us": g["candidate_gap_us"].sum(),
    })
    out["delta_us"] = out["candidate_us"] - out["baseline_us"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["delta_pct"] = np.where(out["baseline_us"] > 0,
                                    out["delta_us"] / out["baseline_us"] * 100.0, np.nan)
        out["share_pct"] = (out["delta_us"] / total_delta * 100.0) if total_delta != 0 \
            else np.nan
    out.index.name = by
    out = out.reset_index()
    return out[[by, *GROUP_COLUMNS]]
