"""A diff's result kept beside the analysed views of its two sides, so the same `diff` of
unchanged files is not aligned, paired and compared again.

One file per (baseline content, candidate content, options) under the analysis cache's folder
(`model.analysis_cache`), named `<40 hex>.diff`, under the same size bound and eviction (least
recently used first, only the cache's own files: it starts and ends with `cache.DIFF_MAGIC`).
Its name is a hash of both sides' analysis records (each the SHA-256 of the whole source, the
window and view options, what the path decides, the code stamp of ttdash's model, report and
present code: `analysis_cache.Entry.record`), the diff's own options and this format's
`VERSION`. Any byte changed in either side is another SHA-256, so another name: a miss.

The file is written as the analysis cache writes a view (`analysis_cache.dump`): the
`DiffResult` pickled, its pairs frame and every large array as Arrow IPC sections (numbers as
they are, text as dictionary codes, nullable columns as values and a mask), the record it was
kept for and the SHA-1 of everything before its trailer (a flipped bit is a miss). The result
is kept without its two views: what its outputs read of them (`Side`: the pause threshold, the
devices, the path) stands in, so a hit reads neither view. What depends on the files beside a
trace rather than its content (telemetry) is read again on every run; each side's path is the
one given this time (a file renamed or hard-linked is the same content).

Used for the text outputs of a two-file diff (the interactive view drills into both views;
several runs a side read each run): `commands.diff`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..read import analysis_cache, cache

VERSION = 1
SUFFIX = ".diff"
MAGIC = cache.DIFF_MAGIC


@dataclass
class SideTrace:
    """What a stored diff's outputs read of a side's trace."""

    path: Path
    devices: Any


@dataclass
class Side:
    """A side's view as a stored diff holds it (model.View's attributes its outputs read)."""

    pause_above_us: float
    trace: SideTrace
    merged: bool = True

    @classmethod
    def of(cls, view: Any) -> Side:
        return cls(view.pause_above_us, SideTrace(view.trace.path, view.trace.devices),
                   bool(getattr(view, "merged", True)))


@dataclass
class DiffEntry:
    """Where the diff of two sources (each an analysis_cache.Entry) with one set of options
    lives."""

    sides: tuple[Any, Any]  # analysis_cache.Entry of the baseline, of the candidate
    file: Path
    record: dict[str, Any]

    @classmethod
    def of(cls, baseline: Any, candidate: Any, key: str) -> DiffEntry | None:
        """The entry of two cacheable sides' diff with options `key`, or None (a side not
        cached: several files, small, the cache off)."""
        if baseline is None or candidate is None:
            return None
        record = {"v": VERSION, "baseline": baseline.record, "candidate": candidate.record,
                  "key": key}
        name = hashlib.sha256(json.dumps(record, default=str).encode()).hexdigest()[:40]
        return cls((baseline, candidate), cache.traces_dir() / f"{name}{SUFFIX}", record)

    def read(self) -> Any:
        """The stored DiffResult, its sides' paths the ones given now; None on any doubt."""
        result = analysis_cache.read_stored(self.file, self.record, MAGIC,
                                            "reading the cached diff")
        if result is None or not hasattr(result, "pairs"):
            return None
        for side, entry in zip((result.baseline, result.candidate), self.sides):
            side.trace.path = entry.slot.source
        path_a, path_b = (str(e.slot.source) for e in self.sides)
        result.baseline_totals = dataclasses.replace(result.baseline_totals, file=path_a)
        result.candidate_totals = dataclasses.replace(result.candidate_totals, file=path_b)
        result.basis = dataclasses.replace(
            result.basis, baseline=dataclasses.replace(result.basis.baseline, file=path_a),
            candidate=dataclasses.replace(result.basis.candidate, file=path_b))
        return result

    def write(self, result: Any, context: dict[str, Any]) -> bool:
        """Keep `result` (a DiffResult of these sides, as diff_traces made it: `context` its
        own, before any readings were added) if both sources are still what was hashed."""
        kept = dataclasses.replace(result, baseline=Side.of(result.baseline),
                                   candidate=Side.of(result.candidate), context=dict(context),
                                   telemetry={}, runs={}, seconds={})
        return analysis_cache.store(
            self.file, lambda f: analysis_cache.dump(kept, f, self.record, MAGIC),
            lambda: all(e.unchanged() for e in self.sides))
