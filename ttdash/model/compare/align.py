"""Align two integer id sequences: the op-matching engine behind ``ttdash diff``.

numpy only (no pandas): callers turn their rows into integer ids first. Entry point:
:func:`align_sequences`, which returns an :class:`Alignment` (matched positions of both sides).

Inputs are, per side, *signature* ids (equal ids = the same op), optional *attribute* ids (the
same op code, normalised ATTRIBUTES and shape bucket: the first fallback for ops whose shapes or
dtypes changed), coarser *op code* ids (the last fallback) and optional *region* ids (equal ids =
the same signpost region on both sides).

1. **Regions.** With region ids, the runs of equal region ids are aligned as a sequence; each
   paired run becomes one segment aligned on its own, and the ops of unpaired runs lying between
   two pairs form one more segment. Otherwise the whole sequence is one segment.
2. **Ops.** A segment is aligned by, in order:

   a. trimming the common prefix and suffix of signatures (O(n));
   b. when it is small (``la * lb <= DP_CELLS``): an exact weighted longest common subsequence,
      computed row by row with numpy; a pair with the same signature scores ``SIG_WEIGHT``, one
      with the same attribute id ``ATTR_WEIGHT``, one with only the same op code 1 (the
      fallbacks for ops whose shapes changed);
   c. otherwise anchors, then the gaps between anchors recursively (1-by-1 gaps vectorised).
      Candidate pairs come from two generators: (i) for ids occurring equally often on both
      sides, the k-th occurrence in A with the k-th in B (repeated layers align in order);
      (ii) each op of A with the op of B of the same id nearest to where it is expected: first
      with ids of KGRAM consecutive ops (a layer's k-grams recur once per layer, so drift does
      not confuse them) along the segment's diagonal, then with single ids along the line
      through the best anchors so far (robust when scattered edits change every id's count).
      A longest increasing subsequence (patience sorting, O(k log k)) keeps the largest
      consistent subset of each candidate set. Signatures are tried before attribute ids, and
      those before op codes; the largest set wins, and a set covering half of the shorter side
      is taken at once.

   Work: O((n + m) log(n + m)) for the anchoring plus the bounded DP inside small gaps; no
   O(n * m) step over a whole sequence.
3. **Polish.** Around every imperfection (a gap, an op-code-only match), a window of
   ``POLISH_WINDOW`` matched ops on each side is re-solved with the exact DP of (b) and the
   better answer kept: an anchor inside a run of identical ops may sit one op off.
4. **Moves.** A leftover removed op and a leftover added op with the same signature, within
   ``MOVE_WINDOW`` positions of where the alignment around them puts it, are paired and marked
   ``moved`` (locally reordered ops, e.g. two adjacent ops swapped).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from ..read.cells import factorize_rows
from .lcs import ATTR_WEIGHT, SIG_WEIGHT, weighted_lcs

__all__ = ["Alignment", "align_sequences", "kgram_ids", "weighted_lcs", "SIG_WEIGHT",
           "ATTR_WEIGHT", "DP_CELLS", "KGRAM", "REFINE_ROUNDS", "POLISH_WINDOW", "MOVE_WINDOW"]

DP_CELLS = 2_000_000  # exact weighted LCS below this many cells (la * lb)
KGRAM = 3  # ops of context in the first-round ids of the nearest pairing
REFINE_ROUNDS = 3  # re-pairings guided by the anchors found so far
#: k-gram ids at most once per this many ops (of a segment) also seed a chain of their own: a
#: long trace of identical layers drifts from the diagonal by more than half a layer
RARE_SPACING = 256
POLISH_WINDOW = 16  # matched ops of context re-solved on each side of an imperfection
MOVE_WINDOW = 8  # positions around the expected place where a moved op is looked for


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
    """Indices of one longest strictly increasing subsequence of ``x``.

    An element above everything before it and below everything after it (a pivot) can join
    any increasing subsequence, so every longest one holds it; between two pivots all values
    lie between theirs. So the pivots (found with numpy) plus a longest increasing subsequence
    of the other elements (patience sorting, in Python) is one: anchor candidates are mostly in
    order, and only their few disordered elements pay the Python loop."""
    n = len(x)
    if n < 2 or bool(np.all(x[1:] > x[:-1])):
        return np.arange(n)
    above = np.empty(n, dtype=bool)  # above everything before (the first: nothing before)
    above[0], above[1:] = True, x[1:] > np.maximum.accumulate(x[:-1])
    below = np.empty(n, dtype=bool)  # below everything after (the last: nothing after)
    below[-1], below[:-1] = True, x[:-1] < np.minimum.accumulate(x[:0:-1])[::-1]
    pivot = above & below
    rest = np.flatnonzero(~pivot)
    if len(rest) > n // 2:  # far from order (a low outlier late unpivots all before it)
        return _patience(x)
    pivot[rest[_patience(x[rest])]] = True  # (now: the elements kept)
    return np.flatnonzero(pivot)


def _patience(x: np.ndarray) -> np.ndarray:
    """Indices of one longest strictly increasing subsequence of ``x`` (patience sorting)."""
    n = len(x)
    if n == 0:
        return np.zeros(0, np.int64)
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


def _rare(a: np.ndarray) -> np.ndarray:
    """``a`` with every id that recurs within RARE_SPACING positions replaced by -1 (an id no
    side has): what is left cannot be mistaken for its neighbouring occurrence unless the sides
    drift apart by RARE_SPACING / 2."""
    order = np.argsort(a, kind="stable")  # by id, then position
    ids = a[order]
    same = ids[1:] == ids[:-1]
    close = same & (np.diff(order) < RARE_SPACING)
    crowded = np.zeros(len(a), dtype=bool)
    crowded[order[1:][close]] = True  # the later of two close occurrences
    crowded[order[:-1][close]] = True  # and the earlier
    return np.where(crowded, -1, a)


class _Sorted:
    """One side's ids sorted once (stably: by id, then position), with where each distinct id's
    run starts and how long it is: what every nearest pairing against that side looks up."""

    def __init__(self, b: np.ndarray) -> None:
        self.n = len(b)
        self.order = np.argsort(b, kind="stable")
        ids = b[self.order]
        starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]])) if len(ids) \
            else np.zeros(0, np.int64)
        self.values = ids[starts]
        self.start = starts
        self.count = np.diff(np.append(starts, len(ids)))
        self.key = ids.astype(np.float64) * (self.n + 1) + self.order


def _nearest_pairs(a: np.ndarray, b: np.ndarray | _Sorted,
                   guide: tuple[np.ndarray, np.ndarray] | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Candidate anchors: each op of ``a`` with the op of ``b`` of the same value nearest to
    where it is expected: on the segment's diagonal, or interpolated through ``guide`` pairs.
    ``b`` may be given sorted (_Sorted), as the refinements of one segment reuse it."""
    sb = b if isinstance(b, _Sorted) else _Sorted(b)
    la, lb = len(a), sb.n
    if not la or not len(sb.values):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if guide is not None and len(guide[0]) >= 2:
        expected = np.interp(np.arange(la), guide[0], guide[1])
    else:
        expected = np.arange(la) * (lb / la)
    key_a = a.astype(np.float64) * (lb + 1) + expected
    # each op's run of its id in b: the distinct ids are few, so this search is short
    j = np.minimum(np.searchsorted(sb.values, a), len(sb.values) - 1)
    has = (sb.values[j] == a) & (a >= 0)
    lo = sb.start[j]
    hi = lo + np.where(has, sb.count[j], 0)
    k = np.clip(np.searchsorted(sb.key, key_a), lo, np.maximum(hi - 1, lo))
    prev = np.maximum(k - 1, lo)
    kk = np.minimum(k, lb - 1)
    pp = np.minimum(prev, lb - 1)
    d_next = np.abs(sb.order[kk] - expected)
    d_prev = np.abs(sb.order[pp] - expected)
    pick = np.where(d_prev < d_next, pp, kk)
    pa = np.flatnonzero(has)
    return pa, sb.order[pick[has]]


class _Aligner:
    """Aligns segments of two sequences given signature ids, op-code ids and optionally
    attribute ids (int arrays)."""

    def __init__(self, a_sig: np.ndarray, b_sig: np.ndarray, a_code: np.ndarray,
                 b_code: np.ndarray, a_attr: np.ndarray | None = None,
                 b_attr: np.ndarray | None = None) -> None:
        self.a_sig, self.b_sig = a_sig, b_sig
        self.a_code, self.b_code = a_code, b_code
        self.a_attr, self.b_attr = a_attr, b_attr
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
            a, b = self._levels()[level]
            self._kgrams[level] = kgram_ids(a, b, KGRAM)
        return self._kgrams[level]

    def _levels(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The id levels tried in order: signatures, attribute ids (when given), op codes."""
        levels = {"sig": (self.a_sig, self.b_sig)}
        if self.a_attr is not None and self.b_attr is not None:
            levels["attr"] = (self.a_attr, self.b_attr)
        levels["code"] = (self.a_code, self.b_code)
        return levels

    def _weights(self, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
        """The DP's score of pairs (ia[k], ib[k]) of the same op code."""
        w = np.where(self.a_sig[ia] == self.b_sig[ib], SIG_WEIGHT, 1)
        if self.a_attr is not None and self.b_attr is not None:
            w = np.where((w == 1) & (self.a_attr[ia] == self.b_attr[ib]), ATTR_WEIGHT, w)
        return w

    def _anchors(self, a0: int, a1: int, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray]:
        """Consistent anchor pairs (segment-local positions) for a large segment.

        For signatures, then attribute ids, then op codes: occurrence pairs of equally frequent
        ids; if they cover less than half of the shorter side, nearest-to-the-diagonal pairs of
        k-gram ids (a repeated layer's k-grams recur only once per layer, so drift rarely
        confuses them),
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

        for level, (ids_a, ids_b) in self._levels().items():
            xa, xb = ids_a[a0:a1], ids_b[b0:b1]
            consider(*_occurrence_pairs(xa, xb))
            if len(best[0]) >= enough:
                break
            ka, kb = self._kgram(level)
            sorted_kb, sorted_xb = _Sorted(kb[b0:b1]), _Sorted(xb)  # (for every pairing)
            seeds = [_nearest_pairs(ka[a0:a1], sorted_kb)]
            if a1 - a0 >= 2 * RARE_SPACING:
                seeds.append(_nearest_pairs(_rare(ka[a0:a1]), sorted_kb))
            for pa, pb in seeds:  # each seed's own chain of refinements
                keep = _lis(pb)
                chain = (pa[keep], pb[keep])
                for r in range(REFINE_ROUNDS + 1):  # k-grams first: runs of one id stay apart
                    pa, pb = _nearest_pairs(*((ka[a0:a1], sorted_kb) if r == 0 else
                                              (xa, sorted_xb)), chain)
                    keep = _lis(pb)
                    if len(keep) <= len(chain[0]):
                        break
                    chain = (pa[keep], pb[keep])
                consider(*chain)
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
                                 self.b_code[b0:b1], *self._attr_slices(a0, a1, b0, b1))
        self._emit(ia + a0, ib + b0)

    def _attr_slices(self, a0: int, a1: int, b0: int, b1: int
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
        if self.a_attr is None or self.b_attr is None:
            return None, None
        return self.a_attr[a0:a1], self.b_attr[b0:b1]

    # ------------------------------------------------------------ polish
    def polish(self, ma: np.ndarray, mb: np.ndarray,
               segments: list[tuple[int, int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """Re-solve, with the exact DP, a window of POLISH_WINDOW matched ops on each side of
        every imperfection (a gap, a match that is not by signature) and keep the better answer.

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
            w[inner] = self._weights(ea[inner], eb[inner])
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
                if current >= SIG_WEIGHT * min(ra1 - ra0, rb1 - rb0):
                    continue  # no answer can score more (an op deleted, or inserted, alone)
                ia, ib, score = weighted_lcs(self.a_sig[ra0:ra1], self.a_code[ra0:ra1],
                                             self.b_sig[rb0:rb1], self.b_code[rb0:rb1],
                                             *self._attr_slices(ra0, ra1, rb0, rb1))
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


def kgram_ids(a: np.ndarray, b: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the k consecutive ids starting at each position (shared id space for a and b).

    The last k - 1 positions of each side use a shorter window (padded with a sentinel)."""
    cols = []
    for s in range(k):
        pa = np.concatenate([a[s:], np.full(min(s, len(a)), -1, np.int64)])
        pb = np.concatenate([b[s:], np.full(min(s, len(b)), -1, np.int64)])
        cols.append(np.concatenate([pa, pb]))
    ids = factorize_rows(cols)
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
    (inside one segment: a move never crosses a signpost region boundary).

    Removed ops are taken in order of their expected position in B; each picks the added op of
    its (signature, segment) key nearest to that position, within MOVE_WINDOW (the earlier one on
    a tie); an added op picked twice goes to the first removed op only.
    """
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
    expected = expected.astype(np.int64)
    key = factorize_rows([np.concatenate([a_sig[rem], b_sig[add]]),
                          np.concatenate([a_seg[rem], b_seg[add]])])
    key_a, key_b = key[:len(rem)], key[len(rem):]
    left = np.argsort(expected, kind="stable")
    key_a, expected, rem = key_a[left], expected[left], rem[left]
    right = np.lexsort((add, key_b))  # by key, then position
    key_b, pos = key_b[right], add[right].astype(np.int64)
    # (key, position) as one sortable integer: positions are >= 0 and below `span`.
    span = int(max(expected.max(), pos.max())) + 1
    comp_b = key_b * span + pos
    comp_a = key_a * span + expected
    n = len(pos)
    back = np.searchsorted(comp_b, comp_a, side="right") - 1  # last pos <= expected
    fwd = np.searchsorted(comp_b, comp_a, side="left")  # first pos >= expected
    bi, fi = np.clip(back, 0, n - 1), np.clip(fwd, 0, n - 1)
    d_back, d_fwd = expected - pos[bi], pos[fi] - expected
    ok_back = (back >= 0) & (key_b[bi] == key_a) & (d_back <= MOVE_WINDOW)
    ok_fwd = (fwd < n) & (key_b[fi] == key_a) & (d_fwd <= MOVE_WINDOW)
    use_back = ok_back & (~ok_fwd | (d_back <= d_fwd))
    found = ok_back | ok_fwd
    xa = rem[found]
    xb = np.where(use_back, pos[bi], pos[fi])[found]
    _, first = np.unique(xb, return_index=True)
    first.sort()
    return xa[first].astype(np.int64), xb[first].astype(np.int64)


def align_sequences(a_sig: np.ndarray, b_sig: np.ndarray, a_code: np.ndarray | None = None,
                    b_code: np.ndarray | None = None, a_region: np.ndarray | None = None,
                    b_region: np.ndarray | None = None, moves: bool = True,
                    a_attr: np.ndarray | None = None, b_attr: np.ndarray | None = None
                    ) -> Alignment:
    """Align two op sequences given as integer ids.

    ``a_sig``/``b_sig``: signature ids (equal ids = same op); ``a_code``/``b_code``: coarser op
    code ids for the fallback (default: the signatures); ``a_region``/``b_region``: region key ids
    (equal ids = the same signpost region on both sides; default: no region anchoring);
    ``a_attr``/``b_attr``: attribute ids, the fallback tried before op codes (default: none).
    """
    a_sig = np.asarray(a_sig, dtype=np.int64)
    b_sig = np.asarray(b_sig, dtype=np.int64)
    a_code = a_sig if a_code is None else np.asarray(a_code, dtype=np.int64)
    b_code = b_sig if b_code is None else np.asarray(b_code, dtype=np.int64)
    la, lb = len(a_sig), len(b_sig)
    segments = [(0, la, 0, lb)]
    if a_region is not None and b_region is not None and la and lb:
        segments = _region_segments(np.asarray(a_region, np.int64), np.asarray(b_region, np.int64))
    attrs = a_attr is not None and b_attr is not None
    aligner = _Aligner(a_sig, b_sig, a_code, b_code,
                       np.asarray(a_attr, dtype=np.int64) if attrs else None,
                       np.asarray(b_attr, dtype=np.int64) if attrs else None)
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
        return (np.zeros(0, np.int64),) * 3
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
