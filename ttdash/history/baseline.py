"""Named baselines (`history baseline set NAME`, `history check --against NAME`): a name for a
set of stored runs, as a perf CI pins a release.

    STORE/baselines/NAME/set-STAMP-UUID.json    {"name", "run_ids", "set_at", "selection"}

Each `set` writes a new file (write-once, under a temporary name renamed into place, as every
file of the store): no file is ever replaced, so setting a baseline needs no lock on any
filesystem, an object store included, and the files keep the name's history. The newest file
of a name (by set_at, then file name) is the baseline. Engines reading `runs/` and `ops/` never
see these files.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ..model.errors import TraceError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
FOLDER = "baselines"


def check_name(name: str) -> str:
    """NAME as a baseline name (letters, digits, . _ -; up to 64), else ValueError."""
    if not NAME.fullmatch(name or ""):
        raise ValueError(f"baseline name {name!r}: use letters, digits, '.', '_' and '-' "
                         "(up to 64, starting with a letter or digit)")
    return name


def set_baseline(store: Any, name: str, run_ids: list[str], selection: str,
                 now: datetime | None = None) -> dict[str, Any]:
    """Write baseline `name` = `run_ids` (a new file; the previous ones stay as its history)."""
    when = now or datetime.now(timezone.utc)
    doc = {"name": check_name(name), "run_ids": list(run_ids),
           "set_at": when.isoformat(), "selection": selection}
    data = (json.dumps(doc, indent=1) + "\n").encode()
    stamp = when.strftime("%Y%m%dT%H%M%S%fZ")
    store._write(store._path(FOLDER, name), f"set-{stamp}-{uuid.uuid4().hex[:8]}.json",
                 lambda sink: sink.write(data))
    return doc


def baselines(store: Any) -> dict[str, dict[str, Any]]:
    """{name: the newest baseline of that name} (a file that does not read is skipped and
    named in store.skipped)."""
    try:
        infos = store.fs.get_file_info(pafs.FileSelector(store._path(FOLDER), recursive=True,
                                                         allow_not_found=True))
    except (OSError, pa.ArrowException) as exc:
        raise store._error(exc, "cannot list the baselines") from None
    newest: dict[str, tuple[tuple[str, str], dict[str, Any]]] = {}
    for i in infos:
        if i.type != pafs.FileType.File or not i.base_name.endswith(".json") \
                or i.base_name.startswith("."):
            continue
        try:
            with store.fs.open_input_stream(i.path) as fh:
                doc = json.loads(fh.read().decode())
            key = (str(doc["set_at"]), i.base_name)
            name = check_name(str(doc["name"]))
            ids = [str(r) for r in doc["run_ids"]]
        except (OSError, pa.ArrowException, ValueError, KeyError, TypeError) as exc:
            store.skipped.append(f"{store._rel(i.path)}: not a baseline ({exc}); skipped")
            continue
        if name not in newest or key > newest[name][0]:
            newest[name] = (key, {**doc, "name": name, "run_ids": ids})
    return {n: d for n, (_, d) in sorted(newest.items())}


def baseline_runs(store: Any, name: str, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored `runs` of baseline `name` (oldest first), each marked with "baseline": name;
    TraceError (exit 2) when there is no such baseline or none of its runs is stored."""
    known = baselines(store)
    if name not in known:
        raise TraceError(store.uri, f"no baseline {name!r} (baselines: "
                         f"{', '.join(known) or 'none; `ttdash history baseline set NAME`'})")
    ids = set(known[name]["run_ids"])
    found = [{**r, "baseline": name} for r in runs if r["run_id"] in ids]
    if not found:
        raise TraceError(store.uri, f"baseline {name!r}: none of its runs "
                         f"({', '.join(sorted(ids))}) is in the store")
    return found
