"""Warm-up and steady state: the repeated iterations of a trace and the first ones that are much
slower than the rest (issue #39 item 4).

An iteration is a repeat of the same work: the same op codes on the same input shapes
(``INPUT_n_{W,Z,Y,X}``), which is what the *work key* of an op is (op code + every input's
shape). Op codes alone are not evidence: two encoder stages run the same op codes on other
shapes, and six matmuls of five shapes are not three iterations. Where the evidence is weak,
nothing is said (and ``--steady-state`` refuses).

Where the iterations come from, in this order:

* ``replay``: one or more metal-trace replay sessions (``METAL TRACE REPLAY SESSION ID``), one
  iteration per session: a replayed trace is the same work by construction, and one session
  is already the steady state. The ops before the first replay are iteration 1 when they are
  as many as a session's (the run that captured the trace, compiling on the way); the capture
  rows (``METAL TRACE ID`` set, no session: recorded, not run) are not counted;
* ``signpost``: a signpost name that occurs two or more times (the most frequent; ties: the one
  seen first). Iteration k runs from its k-th occurrence to the k-th occurrence of its partner
  (a name occurring as often or once less, each occurrence between two of the first
  name's, the latest such: ``..._start`` / ``..._end``), else to its next occurrence (the
  last one to the end of the trace). Iterations must be the same work: half of them or more,
  and two at least, hold the same sequence of work keys (one device's ops, host fallbacks
  left out); a name marking blocks of other sizes or shapes is not a loop;
* ``sequence``: a repeating work-key sequence. The keys (one device's rows) are factorized to
  ids, each id mapped to a random unit complex number; the autocorrelation of that sequence
  (one FFT, O(n log n)) counts, for each lag, about how many ops equal the op that many places
  later. The best lags are then checked exactly (O(n) each): the longest stretch where
  ``x[i] == x[i + p]`` holds is a run of R >= 2 copies of a p-op block (p = 1: one op
  repeated). The lag whose copies cover the most ops wins (ties: the shortest); it must cover
  half the ops or more. A file without input shapes has no sequence iterations (no evidence).

The warm-up rule (WARMUP_RATIO): iteration time is wall time (device time + every op-to-op gap:
compile and cache fills show as host pauses). The reference is the median of the second half
of the iterations; the leading iterations slower than WARMUP_RATIO x that reference are the
warm-up ("iterations 1-2 are warm-up (X ms); steady state from op K", K the ID of the first
op of the first steady iteration). An iteration slower than that after a faster one is not
warm-up (an outlier). An iteration's time includes the gap before its first op (the host's
time between iterations); the file's first op has none.

No Textual and no report imports here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...format import fmt_us
from ..columns import PAUSE_ABOVE_US
from ..errors import TraceError
from ..read.cells import factorize_rows
from ..window import REPLAY_COLUMN, Window
from .advice import Advice
from .metrics import HOST_MARKER, num, split_gaps, text

if TYPE_CHECKING:
    from ..trace import Trace, View

TRACE_ID_COLUMN = "METAL TRACE ID"

#: an iteration is warm-up while its wall time is above this many times the steady median
WARMUP_RATIO = 1.25
#: a repeating op sequence must cover at least this share of the ops to be the iterations
MIN_COVERAGE = 0.5
#: lags of the autocorrelation checked exactly
CANDIDATE_LAGS = 32
MIN_PERIOD = 1
#: where the rule comes from (the Advice's source)
GUIDE = ("tt-metal's model performance guides (ttnn program cache: the first run of an op "
         "compiles its kernels and fills the cache; tech_reports/"
         "AdvancedPerformanceOptimizationsForModels: warm up, then measure the steady state)")
_SEED = 0x39


@dataclass(frozen=True)
class Iterations:
    """The iterations of a trace and the warm-up verdict.

    ``labels``: per row of ``trace.ordered``, the 1-based iteration it belongs to (0: none).
    ``table``: one row per iteration: ``iteration``, ``first_id`` (ID of its first op),
    ``ops``, ``device_time_us``, ``dispatch_us``, ``pauses_us``, ``steady_us``, ``wall_us``,
    ``warmup`` (bool).
    """

    source: str  # "replay", "signpost", "sequence"; "" when nothing repeats
    unit: str  # what one iteration is, in words
    labels: np.ndarray = field(repr=False)
    table: pd.DataFrame = field(repr=False)
    warmup: int = 0  # leading warm-up iterations
    reference_us: float = 0.0  # median wall time of the second half's iterations
    period: int | None = None  # ops per iteration (sequence source)
    before: int = 0  # op rows before the first iteration (the eager run and capture of a replay)

    @property
    def count(self) -> int:
        return len(self.table)

    @property
    def found(self) -> bool:
        """Iterations to report: two or more, or a replay session (one is the steady state)."""
        return self.count >= 2 or (self.source == "replay" and self.count >= 1)

    @property
    def steady_from_id(self) -> int | None:
        """K: the ID of the first op of the first steady iteration."""
        if not self.found:
            return None
        v = self.table["first_id"].iloc[self.warmup]
        return None if pd.isna(v) else int(v)

    @property
    def warmup_us(self) -> float:
        return float(self.table["wall_us"].iloc[:self.warmup].sum())

    @property
    def excess_us(self) -> float:
        """What the warm-up iterations took above as many steady ones."""
        return max(0.0, self.warmup_us - self.warmup * self.reference_us)

    def verdict(self) -> str:
        """One line: the warm-up and where the steady state starts (or that there is none)."""
        if not self.found:
            return "no repeated iterations found"
        n, w = self.count, self.warmup
        if n == 1:
            ops = int(self.table["ops"].iloc[0])
            before = (f"; the {self.before:,} op rows before it (the eager run, the trace "
                      "capture) are not in it" if self.before else "")
            return (f"1 metal-trace replay session ({ops:,} ops, "
                    f"{fmt_us(float(self.table['wall_us'].iloc[0]))}): the steady state, from "
                    f"op {self.steady_from_id}{before}")
        head = f"{n:,} iterations ({self.unit})"
        if not self.reference_us > 0:
            return f"{head}: no warm-up found (the iterations have no device time or gaps)"
        slow = self.slow_later
        later = (f"; {slow:,} later iteration{'s are' if slow != 1 else ' is'} also above "
                 f"{WARMUP_RATIO:g}x the median (not at the start: not warm-up)" if slow else "")
        if not w:
            return (f"{head}: no warm-up (no leading iteration is {WARMUP_RATIO:g}x the "
                    f"steady median of {fmt_us(self.reference_us)}){later}")
        which = "iteration 1 is" if w == 1 else f"iterations 1-{w} are"
        return (f"{head}: {which} warm-up ({fmt_us(self.warmup_us)}); steady state from op "
                f"{self.steady_from_id} (median {fmt_us(self.reference_us)} per iteration)"
                + later)

    @property
    def slow_later(self) -> int:
        """Steady iterations above WARMUP_RATIO x the reference (outliers after the warm-up,
        which the steady state keeps)."""
        wall = self.table["wall_us"].to_numpy(dtype="float64")[self.warmup:]
        return int((wall > WARMUP_RATIO * self.reference_us).sum()) if self.reference_us > 0 \
            else 0

    def as_dict(self) -> dict[str, Any]:
        """For JSON: source, unit, count, period, warmup, warmup_us, slow_later,
        reference_us, steady_from_id, verdict and the per-iteration rows."""
        rows = [{"iteration": int(r.iteration),
                 "first_id": None if pd.isna(r.first_id) else int(r.first_id),
                 "ops": int(r.ops), "device_time_us": float(r.device_time_us),
                 "steady_us": float(r.steady_us), "wall_us": float(r.wall_us),
                 "warmup": bool(r.warmup)} for r in self.table.itertuples(index=False)]
        return {"source": self.source, "unit": self.unit, "count": self.count,
                "period": self.period, "warmup": self.warmup, "warmup_us": self.warmup_us,
                "slow_later": self.slow_later,
                "reference_us": self.reference_us, "steady_from_id": self.steady_from_id,
                "verdict": self.verdict(), "iterations": rows}


# ------------------------------------------------------------------ where iterations are
#: the trace table's columns read here (and every input's shape: _is_shape)
READ = ("ID", "OP CODE", "OP TYPE", "DEVICE ID", "GLOBAL CALL COUNT", REPLAY_COLUMN,
        TRACE_ID_COLUMN)


def _is_shape(label: str) -> bool:
    return label.startswith("INPUT_") and label[-2:] in ("_W", "_Z", "_Y", "_X")


def narrowed(trace: Trace) -> Trace:
    """`trace` to find iterations in: of a trace whose table the analysis cache has not read
    back, a shallow copy holding only the columns read here (READ, the input shapes: ~25 of a
    million ops' 77 columns), read alone."""
    if "ordered" in trace.__dict__:
        return trace
    narrow = copy.copy(trace)
    narrow.__dict__["ordered"] = trace.ordered_columns(
        [c for c in trace.ordered_labels if c in READ or _is_shape(c)])
    return narrow


def iteration_labels(trace: Trace) -> tuple[str, str, np.ndarray, int | None]:
    """(source, unit, per-row labels of trace.ordered, period): the cheap part, no times."""
    o = trace.ordered
    labels = np.zeros(len(o), dtype=np.int64)
    if trace.replay_sessions:
        return "replay", "metal-trace replay sessions", _replay_labels(trace), None
    found = _signpost_labels(trace)
    if found is not None:
        name, labels = found
        return "signpost", f"signpost {name!r}", labels, None
    seq = _sequence_labels(trace)
    if seq is not None:
        period, labels = seq
        unit = "one op repeated" if period == 1 else f"a repeated sequence of {period:,} ops"
        return "sequence", unit, labels, period
    return "", "", labels, None


def _replay_labels(trace: Trace) -> np.ndarray:
    """One iteration per replay session; the ops run before the first replay (the capture
    run: program cache filled, trace recorded) are iteration 1 when they are as many as a
    session's (the modal count). Capture rows (METAL TRACE ID set, no session: the trace
    recorded, not run) are neither."""
    o = trace.ordered
    s = num(o, REPLAY_COLUMN)
    sessions = np.asarray(trace.replay_sessions, dtype="float64")
    ok = ~np.isnan(s)
    rank = np.searchsorted(sessions, np.where(ok, s, sessions[0])) + 1
    is_op = ~(text(o, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    captured = ~np.isnan(num(o, TRACE_ID_COLUMN)) & ~ok
    first = int(np.argmax(ok))
    before = is_op & ~ok & ~captured & (np.arange(len(o)) < first)
    per = np.bincount(rank[ok & is_op], minlength=len(sessions) + 1)[1:]
    lead = bool(before.any()) and int(before.sum()) == int(np.bincount(per).argmax())
    labels = np.where(ok, rank + int(lead), 0)
    if lead:
        labels[before] = 1
    return labels.astype(np.int64)


def _signpost_labels(trace: Trace) -> tuple[str, np.ndarray] | None:
    """The first repeated signpost name (most frequent first; ties: seen first) whose
    iterations are the same work: two or more, and at least half of them, hold the same
    sequence of work keys (blocks of other sizes or shapes marked by one name are not
    iterations)."""
    sp = trace.signposts
    if len(sp) < 2:
        return None
    names = sp["name"].astype(str)
    counts = names.value_counts()
    counts = counts[counts >= 2]
    if counts.empty:
        return None
    first = sp.groupby(names.to_numpy(), sort=False, observed=True)["position"].min()
    rows = _sequence_rows(trace)
    keys = work_keys(trace, rows)
    if keys is None:
        return None
    for name in sorted(counts.index, key=lambda nm: (-counts[nm], first[nm])):
        labels = _signpost_iterations(trace, names, counts, str(name))
        if _same_work(labels[rows], keys, int(counts[name])):
            return str(name), labels
    return None


def _same_work(labels: np.ndarray, keys: np.ndarray, n: int) -> bool:
    """Whether two or more, and half or more, of the n iterations (`labels` 1..n of the rows
    whose work keys are `keys`) hold one same non-empty key sequence."""
    inside = (labels >= 1) & (labels <= n)
    order = np.argsort(labels[inside], kind="stable")  # each iteration's keys, in order
    sizes = np.bincount(labels[inside], minlength=n + 1)[1:]
    parts = np.split(keys[inside][order], np.cumsum(sizes)[:-1])
    seen: dict[bytes, int] = {}
    for part in parts:  # one pass over the keys: n blocks, not n passes over every row
        if len(part):
            b = part.tobytes()
            seen[b] = seen.get(b, 0) + 1
    most = max(seen.values(), default=0)
    return most >= 2 and most * 2 >= n


def work_keys(trace: Trace, rows: np.ndarray) -> np.ndarray | None:
    """Per row of trace.ordered at `rows`: an id of its op code and input shapes (every
    INPUT_n_{W,Z,Y,X} the loader read), equal ids for the same work. None when the file has
    no input shape at these rows (a device log): op codes alone are no evidence of a repeat."""
    o = trace.ordered
    shape = [c for c in o.columns if _is_shape(c)]
    cols = [num(o, c)[rows] for c in shape]
    if not len(rows) or not any(np.isfinite(c).any() for c in cols):
        return None
    code = o["OP CODE"]
    if isinstance(code.dtype, pd.CategoricalDtype):  # the loader's: its codes, no strings
        ids = code.cat.codes.to_numpy()[rows].astype(np.int64)
    else:
        ids = pd.factorize(code.iloc[rows].astype(object).to_numpy(dtype=object),
                           use_na_sentinel=False)[0]
    return factorize_rows([ids, *cols]).astype(np.int64)


def _signpost_iterations(trace: Trace, names: pd.Series, counts: pd.Series,
                         best: str) -> np.ndarray:
    sp = trace.signposts
    pos = np.sort(sp["position"].to_numpy()[(names == best).to_numpy()])
    n_rows = len(trace.ordered)
    ends = np.append(pos[1:], n_rows)
    # a partner: a name occurring once inside each iteration (the last one may lack it: cut
    # short); the one latest in the first iteration ends them
    partner = None
    for other in counts.index:
        k = int(counts[other])
        if other == best or k not in (len(pos), len(pos) - 1):
            continue
        opos = np.sort(sp["position"].to_numpy()[(names == other).to_numpy()])
        if np.all(opos > pos[:k]) and np.all(opos < ends[:k]) and (
                partner is None or opos[0] > partner[0]):
            partner = opos
    if partner is not None:
        ends = np.append(partner, ends[len(partner):])
    delta = np.zeros(n_rows + 1, dtype=np.int64)
    np.add.at(delta, pos, np.arange(1, len(pos) + 1))
    np.add.at(delta, ends, -np.arange(1, len(pos) + 1))
    return np.cumsum(delta[:-1])


def _sequence_rows(trace: Trace) -> np.ndarray:
    """Positions in trace.ordered of one device's op rows: the sequence whose repetition is
    looked for. Host fallbacks are left out: a loop of host ops has no device time to warm up
    (SEG_ENCODER's 156 x 5 `(torch)` ops), and they sit between device ops anyway."""
    o = trace.ordered
    is_op = ~(text(o, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    is_op &= ~text(o, "OP CODE").str.contains(HOST_MARKER, regex=False).fillna(False) \
        .to_numpy(dtype=bool)
    if len(trace.devices) > 1:
        is_op &= num(o, "DEVICE ID") == trace.devices[0]
    return np.flatnonzero(is_op)


def _sequence_labels(trace: Trace) -> tuple[int, np.ndarray] | None:
    rows = _sequence_rows(trace)
    if len(rows) < 2 * MIN_PERIOD:
        return None
    x = work_keys(trace, rows)
    if x is None:
        return None
    found = find_period(x)
    if found is None:
        return None
    start, period, count = found
    bounds = rows[start + period * np.arange(count + 1)[:-1]]
    end_seq = start + period * count
    last_end = rows[end_seq] if end_seq < len(rows) else len(trace.ordered)
    labels = np.zeros(len(trace.ordered), dtype=np.int64)
    delta = np.zeros(len(trace.ordered) + 1, dtype=np.int64)
    delta[bounds] += 1
    delta[last_end] -= count
    labels = np.cumsum(delta[:-1])
    if len(trace.devices) > 1:
        labels = _same_op_same_label(trace, rows, labels)
    return period, labels


def _same_op_same_label(trace: Trace, rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Several devices: an op's rows on the other devices take the label of its row on the
    device the sequence was read from (the op is GLOBAL CALL COUNT >> 10; rows of one op can
    sit on either side of that row in report order). Unchanged when the call counts do not
    name each op once (an old file's plain counts)."""
    gcc = num(trace.ordered, "GLOBAL CALL COUNT")
    if np.isnan(gcc[rows]).any():
        return labels
    op = np.where(np.isnan(gcc), -1, gcc).astype(np.int64) >> 10
    ref = pd.Index(op[rows])
    if not ref.is_unique:
        return labels
    hit = ref.get_indexer(op)
    out = labels.copy()
    ok = (hit >= 0) & (op >= 0)
    out[ok] = labels[rows][hit[ok]]
    return out


_POWER_CHUNK = 1 << 16
_FFT_OUT = np.lib.NumpyVersion(np.__version__) >= "2.0.0"  # numpy.fft's `out=` (numpy 2.0)


def find_period(x: np.ndarray) -> tuple[int, int, int] | None:
    """(start, period, copies) of the longest run of copies of one block in the integer
    sequence `x`, or None when no block repeats over MIN_COVERAGE of it. O(n log n)."""
    n = len(x)
    if n < 2 * MIN_PERIOD:
        return None
    theta = np.random.default_rng(_SEED).random(int(x.max()) + 1) * 2 * np.pi
    z = np.exp(1j * theta)[x]  # (each key's phase once: the same values as exp(1j*theta[x]))
    size = 1 << int(2 * n - 1).bit_length()
    f = np.fft.fft(z, size)
    del z  # (a million ops: each complex array of `size` is 32 MB)
    for at in range(0, size, _POWER_CHUNK):  # f * conj(f) in place, a slice at a time: the
        part = f[at:at + _POWER_CHUNK]  # same products as over the whole array (an `out=`
        part[:] = part * np.conj(part)  # on an operand took another loop, other last bits)
    if _FFT_OUT:  # the inverse in place (the same values; 32 MB less at a million ops' peak)
        np.fft.ifft(f, out=f)
    else:
        f = np.fft.ifft(f)
    ac = f[:n].real.copy()  # ac[p] ~ #{i: x[i] == x[i + p]}
    del f
    lags = np.arange(n)
    ok = (lags >= MIN_PERIOD) & (lags <= n // 2)
    score = np.where(ok, ac, -np.inf)
    k = min(CANDIDATE_LAGS, int(ok.sum()))
    if k <= 0:
        return None
    cand = np.argpartition(-score, k - 1)[:k]
    best: tuple[int, int, int, int] | None = None  # (covered, -period, start, copies)
    for p in sorted(int(c) for c in cand):
        start, length = _longest_true_run(x[p:] == x[:-p])
        copies = (length + p) // p
        if copies < 2:
            continue
        key = (copies * p, -p, start, copies)
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None or best[0] < MIN_COVERAGE * n:
        return None
    return best[2], -best[1], best[3]


def _longest_true_run(eq: np.ndarray) -> tuple[int, int]:
    """(start, length) of the longest run of True in `eq` (the first of equals); (0, 0)."""
    if not eq.any():
        return 0, 0
    d = np.diff(np.concatenate(([0], eq.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    i = int(np.argmax(ends - starts))
    return int(starts[i]), int(ends[i] - starts[i])


# ------------------------------------------------------------------ times and the verdict
def find_iterations(trace: Trace, view: View | None = None) -> Iterations:
    """The trace's iterations with their times and the warm-up verdict. `view`: a whole-trace
    ("all" window) view to take the op times from; else one is made (merged devices). Cached
    on the trace, per device merge and pause threshold (the times' split depends on them)."""
    if view is not None and view.window.mode != "all":
        view = None
    key = (True, PAUSE_ABOVE_US) if view is None else (view.merged, view.pause_above_us)
    cache = trace.__dict__.setdefault("_iterations", {})
    if key in cache:
        found: Iterations = cache[key]
        return found
    narrow = narrowed(trace)
    source, unit, labels, period = iteration_labels(narrow)
    if not source or labels.max(initial=0) < (1 if source == "replay" else 2):
        found = Iterations(source="", unit="", labels=labels, table=_empty_table())
    else:
        found = _timed(source, unit, labels, period, view or trace.view(Window("all")), narrow)
    cache[key] = found
    return found


def iterations_of(view: View) -> Iterations | None:
    """The iterations for a view's header: from the view itself when it is the whole trace,
    the cached ones for the steady-state window; None for other windows (no second pass)."""
    if view.window.mode == "all":
        return find_iterations(view.trace, view)
    if view.window.mode == "steady":
        return find_iterations(view.trace)
    return None


def _empty_table() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
        ("iteration", "int64"), ("first_id", "float64"), ("ops", "int64"),
        ("device_time_us", "float64"), ("dispatch_us", "float64"), ("pauses_us", "float64"),
        ("steady_us", "float64"), ("wall_us", "float64"), ("warmup", "bool"))})


def _timed(source: str, unit: str, labels: np.ndarray, period: int | None,
           view: View, trace: Trace) -> Iterations:
    ops = view.op_rows
    ids = trace.ordered["ID"].to_numpy()
    pos = pd.Index(ids).get_indexer(ops["id"].to_numpy())
    it = np.where(pos >= 0, labels[np.maximum(pos, 0)], 0)
    gap = ops["op_to_op_us"].to_numpy(dtype="float64")
    dispatch, pauses, _ = split_gaps(gap, view.pause_above_us)
    frame = pd.DataFrame({"iteration": it, "id": ops["id"].to_numpy(dtype="float64"),
                          "device": ops["device_time_us"].to_numpy(dtype="float64"),
                          "dispatch": dispatch, "pauses": pauses})
    frame = frame[frame["iteration"] > 0]
    g = frame.groupby("iteration", sort=True, observed=True)
    sums = g[["device", "dispatch", "pauses"]].sum(min_count=0)
    n = int(labels.max(initial=0))
    sums = sums.reindex(np.arange(1, n + 1), fill_value=0.0)
    first = _first_ids(trace, labels, n)
    table = pd.DataFrame({
        "iteration": np.arange(1, n + 1), "first_id": first,
        "ops": g.size().reindex(np.arange(1, n + 1), fill_value=0).to_numpy(dtype=np.int64),
        "device_time_us": sums["device"].to_numpy(), "dispatch_us": sums["dispatch"].to_numpy(),
        "pauses_us": sums["pauses"].to_numpy()})
    table["steady_us"] = table["device_time_us"] + table["dispatch_us"]
    table["wall_us"] = table["steady_us"] + table["pauses_us"]
    warm, ref = warmup_count(table["wall_us"].to_numpy(dtype="float64"))
    table["warmup"] = np.arange(n) < warm
    is_op = ~(text(trace.ordered, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    before = int(is_op[:int(np.argmax(labels > 0))].sum())
    return Iterations(source=source, unit=unit, labels=labels, table=table, warmup=warm,
                      reference_us=ref, period=period, before=before)


def _first_ids(trace: Trace, labels: np.ndarray, n: int) -> np.ndarray:
    """ID of the first op row (not a signpost) of each iteration in report order."""
    o = trace.ordered
    is_op = ~(text(o, "OP TYPE") == "signpost").fillna(False).to_numpy(dtype=bool)
    lab = np.where(is_op, labels, 0)
    out = np.full(n, np.nan)
    hit = np.flatnonzero(lab > 0)
    if len(hit):
        k, first = np.unique(lab[hit], return_index=True)
        out[k - 1] = o["ID"].to_numpy()[hit[first]]
    return out


def warmup_count(wall: np.ndarray) -> tuple[int, float]:
    """(leading warm-up iterations, reference): the iterations before the first one at or
    under WARMUP_RATIO x the median of the second half (so at least one stays steady)."""
    n = len(wall)
    if n < 2:
        return 0, float(wall[0]) if n else 0.0
    ref = float(np.median(wall[n // 2:]))
    if not ref > 0:
        return 0, ref
    slow = wall > WARMUP_RATIO * ref  # never all: half of the second half is <= ref
    return int(np.argmin(slow)), ref


# ------------------------------------------------------------------ the steady-state window
def steady_rows(trace: Trace, is_signpost: np.ndarray) -> tuple[pd.DataFrame, str]:
    """Trace.window_rows for Window("steady"): the op rows of the iterations after the
    warm-up. TraceError (exit 2) when the trace has no repeated iterations."""
    found = find_iterations(trace)
    if not found.found:
        raise TraceError(trace.path, "--steady-state: no repeated iterations found (no replay "
                         "session, no repeated signpost or op sequence of the same op codes and "
                         "input shapes); drop the option for the whole trace")
    keep = (found.labels > found.warmup) & ~is_signpost
    n, first = found.count, found.warmup + 1
    which = f"iteration {n} of {n}" if first == n else f"iterations {first}-{n} of {n}"
    if n == 1:
        which = "the one replay session"
    return trace.ordered[keep], (f"steady state: {which} ({found.unit}), from op "
                                 f"{found.steady_from_id}")


def steady_note(trace: Trace, shown: int) -> str:
    """The steady window's note: what was left out (the warm-up, ops outside iterations)."""
    found = find_iterations(trace)
    total = trace.op_count
    w = found.warmup
    left = (f"warm-up iteration{'s' * (w != 1)} 1{f'-{w}' if w > 1 else ''} "
            f"({fmt_us(found.warmup_us)}) left out" if w else "no warm-up found")
    if found.count == 1:
        left = (f"the {found.before:,} op rows before the replay session (the eager run, the "
                "trace capture) left out" if found.before else "the replay session only")
    return (f"{left}; {shown:,} of the file's {total:,} op rows are in the steady state "
            "(--steady-state; without it every op is shown)")


# ------------------------------------------------------------------ advice
def warmup_advice(view: View) -> list[Advice]:
    """One ``warmup`` entry when the trace's first iterations are warm-up, else []: ``id`` is
    K (the first steady op), the message names the iterations, their ops and time and the
    guide (GUIDE); ``saving_us`` is the warm-up's time above as many steady iterations (what a
    measurement including them overstates), ``saving_pct`` that share of every iteration's
    wall time."""
    found = find_iterations(view.trace, view if view.window.mode == "all" else None)
    if not found.found or not found.warmup:
        return []
    wall = float(found.table["wall_us"].sum())
    return [Advice(id=found.steady_from_id, kind="warmup",
                   message=f"{warmup_message(found)} (source: {GUIDE})",
                   saving_us=found.excess_us,
                   saving_pct=found.excess_us / wall * 100 if wall > 0 else None)]


def warmup_message(found: Iterations) -> str:
    """What the warm-up advice says of `found` (iterations with a warm-up): the verdict, what
    to measure instead, and the first iterations' times."""
    ops = int(found.table["ops"].iloc[:found.warmup].sum())
    return (f"{found.verdict()}: measure the steady state (--steady-state), not the "
            f"warm-up's {ops:,} ops, which took {fmt_us(found.excess_us)} more than "
            f"{found.warmup} steady iteration{'s' * (found.warmup != 1)}; per iteration: "
            + ", ".join(fmt_us(v) for v in found.table["wall_us"].iloc[:8])
            + (", ..." if found.count > 8 else ""))
