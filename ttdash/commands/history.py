"""`ttdash history`: add runs to the Parquet run history, list them, trends, a gate against the
last N runs, SQL over the store (DuckDB, optional), and the interactive list.

Exit codes: 0 ok; 1 `check` found a regression; 2 bad input (a missing, unreadable or read-only
store, a store file written by a newer ttdash, a bad report, no comparable runs to check against).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from ..model.errors import TraceError
from .common import load_view, note, refuse_input_as_output, remember, stderr_line, write_output
from .options import HistoryOptions, WindowOptions

EXIT_OK, EXIT_REGRESSION = 0, 1


def _labels(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    from ..history.query import parse_labels

    try:
        return parse_labels(pairs, what)
    except ValueError as exc:
        raise TraceError(None, str(exc)) from None


def _store(opts: HistoryOptions):
    from ..history.store import Store

    return Store.open(opts.store)


def _runs(store, columns: list[str] | None = None, new_ok: bool = False) -> list[dict]:
    """The store's runs. `new_ok`: a store not made yet (nothing added so far) has none, said
    in a note (`list` and `trend` print the empty list; an empty list is not an error)."""
    if new_ok and _not_made_yet(store):
        note(f"{store.uri}: no history store here yet (`ttdash history add REPORT` creates it)")
        return []
    runs = store.runs(columns)
    for line in store.skipped:
        note(line)
    return runs


def _not_made_yet(store) -> bool:
    """Nothing at the store's place (a file there, or one that cannot be read, is an error)."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    try:
        if store.fs.get_file_info(store.root).type != pafs.FileType.NotFound:
            return False
    except (OSError, pa.ArrowException):
        return False
    if not store.local:
        return True
    parent = Path(store.root).parent  # a store under a file can never be made: an error
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent.is_dir()


def record_of(path: str | Path, window: WindowOptions, labels: dict[str, str] | None = None):
    """The history record of one report (a CSV, or a profiler dir's newest report)."""
    from ..health.telemetry import readings_for_report, summarize
    from ..history.record import build, run_sums
    from ..model.compare.signature import signature_codes

    view = load_view(str(path), window, keep=False)
    signature_codes(view)  # the ops' signatures (the store's, `check`'s) kept with the view
    run_sums(view)  # and its sums (the record's)
    remember(view)
    telemetry = summarize(readings_for_report(view.trace.path, view.trace.devices))
    entry = view.__dict__.get("_acache")  # the analysis cache hashed the file already
    return build(view, labels=labels, telemetry=telemetry,
                 sha=(entry.digest, entry.size) if entry is not None else None)


def recorder(store_uri: str | None) -> Callable[[Path], str]:
    """For `watch --record` / `run --record`: adds a finished report to the store and returns
    the line to show (raises TraceError when it cannot)."""
    from ..history.store import Store

    store = Store.open(store_uri)

    def record(path: Path) -> str:
        rec = record_of(path, WindowOptions())
        added = store.add(rec)
        return (f"recorded run {rec.run_id} in {store.uri}" if added
                else f"run {rec.run_id} is in {store.uri} already")

    return record


def history(opts: HistoryOptions) -> int:
    """The `ttdash history` command (see the module docstring for exit codes)."""
    if opts.action is None:
        from ..tui.app import run_guarded
        from ..tui.history import history_app
        from .common import needs_terminal

        store = _store(opts)
        store.files("runs")  # a missing or unreadable store: one line, exit 2, no screen
        needs_terminal(store.uri, "the interactive history", "`ttdash history list` (or "
                       "trend, check, sql)")
        return run_guarded(history_app(store, theme=opts.theme))
    return {"add": add, "list": list_runs, "trend": trend, "check": check,
            "sql": sql, "export": export, "baseline": baseline}[opts.action](opts)


def add(opts: HistoryOptions) -> int:
    """Each PATH in turn: a bad one is said (one line) and the rest are still added; exit 2
    when any failed."""
    from ..history.schema import NewerSchema
    from ..model.read.text import clean_text

    store = _store(opts)
    labels = _labels(opts.labels, "--label")
    failed = 0
    for path in opts.paths:
        try:
            rec = record_of(path, opts.window, labels)
            added = store.add(rec)
        except TraceError as exc:
            if isinstance(exc, NewerSchema) or (exc.path is not None
                                                and str(exc.path) == store.uri):
                raise  # the store itself: every other add would fail the same way
            stderr_line(exc.oneline())
            failed += 1
            continue
        state = "added" if added else ("already in the store (same file content and "
                                       "analysis): kept once, labels unchanged")
        sys.stdout.write(str(clean_text(f"{rec.run_id}  {state}  {rec.arch}  "
                                        f"{rec.row['ops']:,} ops  {rec.row['file']}")) + "\n")
        sys.stdout.flush()
    for line in store.skipped:
        note(line)
    return 2 if failed else EXIT_OK


def _selected(opts: HistoryOptions, runs: list[dict]) -> list[dict]:
    from ..history.query import matching

    return matching(runs, where=_labels(opts.where, "--where"))


def _last(opts: HistoryOptions, rows: list[dict]) -> list[dict]:
    return rows[-opts.last:] if opts.last else rows


def list_runs(opts: HistoryOptions) -> int:
    from ..history.query import trend as trend_rows
    from ..report.history import render_runs

    store = _store(opts)
    runs = _selected(opts, _runs(store, ["file", "window", "ops", "device_time_us",
                                         "steady_us", "labels"], new_ok=True))
    rows = {r["run_id"]: r for r in runs}
    # the change against the run before is computed over the whole selection, then --last
    shown = _last(opts, [{**rows[t["run_id"]], "change_pct": t["change_pct"]}
                         for t in trend_rows(runs)])[::-1]  # newest first
    title = f"{len(shown)} run{'s' * (len(shown) != 1)} in {store.uri} (newest first)"
    write_output(opts.out, lambda out: render_runs(shown, opts.format, out, title,
                                                   {"store": store.uri}))
    return EXIT_OK


def trend(opts: HistoryOptions) -> int:
    from ..history.query import trend as trend_rows
    from ..report.history import render_trend

    store = _store(opts)
    runs = _selected(opts, _runs(store, new_ok=True))
    if opts.by:
        return _trend_by(opts, store, _last(opts, runs))
    rows = _last(opts, trend_rows(runs, op=opts.op, region=opts.region))
    what = (f"op code {opts.op}" if opts.op else f"region {opts.region}" if opts.region
            else "whole runs")
    if (opts.op or opts.region) and rows and not any(r["ops"] for r in rows):
        # a name no run has (a typo, a config suffix): a table of zeros would read as a
        # trend; name the closest ones instead
        from ..history.query import closest_names

        kind = "op_codes" if opts.op else "regions"
        close = closest_names(runs, kind, opts.op or opts.region or "")
        hint = ("; closest: " + ", ".join(close)) if close else ""
        raise TraceError(store.uri, f"no run in the selection has {what}{hint}")
    title = f"Trend of {what}: {len(rows)} run{'s' * (len(rows) != 1)}, oldest first"
    write_output(opts.out, lambda out: render_trend(
        rows, opts.format, out, title, {"store": store.uri, "op": opts.op,
                                        "region": opts.region}))
    return EXIT_OK


def _trend_by(opts: HistoryOptions, store, runs: list[dict]) -> int:
    """`trend --by LABEL`: one row per value of a numeric label (a batch size), with device
    time per sample; runs without a numeric value of it are left out (said in a note), none
    at all is an error (exit 2) naming the labels the runs have."""
    from ..history.query import trend as trend_rows
    from ..history.query import trend_by
    from ..report.history import render_by

    label = opts.by or ""
    rows, used = trend_by(runs, label, op=opts.op, region=opts.region)
    if runs and not rows:
        seen = sorted({k for r in runs for k in (r.get("labels") or {})})
        raise TraceError(store.uri, f"no run in the selection has a numeric label {label!r} "
                         f"(add runs with --label {label}=N; labels: "
                         f"{', '.join(seen) or 'none'})")
    if len(used) < len(runs):
        note(f"{len(runs) - len(used)} run(s) without a numeric {label} label left out")
    if (opts.op or opts.region) and rows and not any(r["ops"] for r in rows):
        from ..history.query import closest_names

        kind = "op_codes" if opts.op else "regions"
        close = closest_names(used, kind, opts.op or opts.region or "")
        hint = ("; closest: " + ", ".join(close)) if close else ""
        what = f"op code {opts.op}" if opts.op else f"region {opts.region}"
        raise TraceError(store.uri, f"no run in the selection has {what}{hint}")
    what = (f"op code {opts.op}" if opts.op else f"region {opts.region}" if opts.region
            else "whole runs")
    title = (f"Trend of {what} by {label}: {len(rows)} value{'s' * (len(rows) != 1)} from "
             f"{len(used)} run{'s' * (len(used) != 1)}; per sample = time / {label}")
    per_run = trend_rows(used, op=opts.op, region=opts.region)
    write_output(opts.out, lambda out: render_by(
        rows, label, opts.format, out, title,
        {"store": store.uri, "op": opts.op, "region": opts.region}, per_run))
    return EXIT_OK


def check(opts: HistoryOptions) -> int:
    """The gate against the last N comparable runs, under `diff --fail-above`'s rules
    (ttdash.model.compare.gate): the checked run is aligned op by op with each stored run; runs it
    matches under MIN_MATCH_RATE are other programs and left out (unless one is the other's
    first ops: a run cut short); any other refusal (no valid device time, timings missing on
    one side, a side that stops early, more corrupt timings, gaps on one side, a zero baseline)
    fails closed with exit 2."""
    from ..history import query
    from ..model.columns import MIN_MATCH_RATE
    from ..model.compare.signature import signature_codes
    from ..report.history import render_check

    refuse_input_as_output(opts.out, opts.paths)
    store = _store(opts)
    rec = record_of(opts.paths[0], opts.window)
    run = {**rec.row, "arch": rec.arch}
    where = _labels(opts.where, "--where")
    cond = ", ".join([f"arch {rec.arch}", f"window {run['window']!r}",
                      "per device" if run["per_device"] else "devices merged",
                      f"--pause-above {run['pause_above_us']:g}"]
                     + [f"{k}={v}" for k, v in where.items()])
    candidates = query.matching(
        _check_runs(opts, store), arch=rec.arch, window=run["window"], per_device=run["per_device"],
        pause_above_us=run["pause_above_us"], where=where, exclude=rec.run_id)
    if not candidates:
        raise TraceError(store.uri, f"no earlier run matches ({cond}): nothing to check "
                         "against; add a baseline first (ttdash history add)")
    codes, texts = signature_codes(rec.view)
    signatures = texts[codes]
    history, bases, others = [], [], []
    for r in reversed(candidates):  # newest first, until --last runs of this program
        basis = query.compare_to_run(store, r, rec.view, signatures)
        if basis.match_rate < MIN_MATCH_RATE and not basis.cut_short:  # a cut run is this one
            others.append((r["run_id"], basis.match_rate))
            continue
        history.insert(0, r)
        bases.insert(0, basis)
        if opts.last and len(history) == opts.last:
            break
    if not history:
        best = max(m for _, m in others)
        raise TraceError(store.uri, f"no earlier run of this program: {len(others)} run"
                         f"{'s' * (len(others) != 1)} match ({cond}) but at most {best:.0%} of "
                         f"their ops align with this run's (under {MIN_MATCH_RATE:.0%}: other "
                         "programs); add a baseline of this program first")
    assert opts.fail_above is not None  # required by the parser
    result = query.check(run, history, opts.fail_above, bases)
    result.other_programs = others
    problems: list[str] = []
    for basis in bases:
        for p in basis.problems("steady", basis.whole_pct("steady")):
            if p not in problems:
                problems.append(p)
    if problems:
        raise TraceError(store.uri, "history check cannot trust this comparison: "
                         + "; ".join(problems))
    if others:
        note(f"left out {len(others)} run{'s' * (len(others) != 1)} of other programs "
             f"(under {MIN_MATCH_RATE:.0%} of ops aligned): "
             + ", ".join(f"{rid} ({m:.0%})" for rid, m in others[:5])
             + (", ..." if len(others) > 5 else ""))
    write_output(opts.out, lambda out: render_check(result, opts.format, out))
    if result.failed:
        # once: a table or markdown on stdout starts with the verdict; else it goes to stderr
        if opts.out.output or opts.format not in ("table", "markdown"):
            stderr_line(result.verdict())
        return EXIT_REGRESSION
    return EXIT_OK


def export(opts: HistoryOptions) -> int:
    """`history export --format benchmark`: the selected runs (--where, --last; oldest first)
    as a JSON list of CompleteBenchmarkRun records (history/export.py says where each field
    comes from)."""
    import json

    from ..history.export import benchmark_run

    store = _store(opts)
    runs = _last(opts, _selected(opts, _runs(store)))
    records = [benchmark_run(r) for r in runs]
    write_output(opts.out, lambda out: out.write(json.dumps(records, indent=1) + "\n"))
    return EXIT_OK


def _check_runs(opts: HistoryOptions, store) -> list[dict]:
    """The runs `check` may compare with: every stored run, or with --against NAME the runs of
    that baseline (each marked with its name: the verdict says it)."""
    runs = _runs(store)
    if not opts.against:
        return runs
    from ..history.baseline import baseline_runs

    return baseline_runs(store, opts.against, runs)


def baseline(opts: HistoryOptions) -> int:
    """`history baseline set NAME` (the runs chosen by --run, --where, --last) and `history
    baseline list`."""
    from ..history.baseline import baselines, check_name, set_baseline
    from ..model.read.text import clean_text

    store = _store(opts)
    if opts.baseline_action == "list":
        if opts.name or opts.run_ids:
            raise TraceError(None, "history baseline list takes no NAME or --run")
        known = baselines(store) if not _not_made_yet(store) else {}
        for line in store.skipped:
            note(line)
        for name, doc in known.items():
            sys.stdout.write(str(clean_text(
                f"{name}  set {doc['set_at'][:19].replace('T', ' ')} UTC  {len(doc['run_ids'])}"
                f" run{'s' * (len(doc['run_ids']) != 1)}: {' '.join(doc['run_ids'])}"
                f"  ({doc.get('selection', '')})")) + "\n")
        if not known:
            note(f"{store.uri}: no baselines (`ttdash history baseline set NAME --last 1`)")
        return EXIT_OK
    if not opts.name:
        raise TraceError(None, "history baseline set needs a NAME")
    try:
        check_name(opts.name)
    except ValueError as exc:
        raise TraceError(None, str(exc)) from None
    if not (opts.run_ids or opts.where or opts.last):
        raise TraceError(None, "history baseline set: choose its runs with --run RUN_ID, "
                         "--where KEY=VALUE or --last N")
    runs = _selected(opts, _runs(store))
    if opts.run_ids:
        chosen = []
        for want in opts.run_ids:
            hits = [r for r in runs if r["run_id"].startswith(want)]
            if len(hits) != 1:
                raise TraceError(store.uri, f"--run {want}: {'no' if not hits else len(hits)} "
                                 "stored run" + ("s" if len(hits) > 1 else "") + " with this "
                                 "id" + (" (give more of it)" if hits else ""))
            chosen.append(hits[0])
        runs = [r for r in runs if any(r is c for c in chosen)]
    runs = _last(opts, runs)
    if not runs:
        raise TraceError(store.uri, "no stored run matches the selection: the baseline is "
                         "not set")
    selection = " ".join([*(f"--run {r}" for r in opts.run_ids),
                          *(f"--where {w}" for w in opts.where),
                          *([f"--last {opts.last}"] if opts.last else [])])
    doc = set_baseline(store, opts.name, [r["run_id"] for r in runs], selection)
    sys.stdout.write(str(clean_text(f"baseline {doc['name']} = {len(runs)} run"
                                    f"{'s' * (len(runs) != 1)}: "
                                    f"{' '.join(doc['run_ids'])}")) + "\n")
    return EXIT_OK


def _unreadable(con, files: list[str]) -> str | None:
    """The first of `files` DuckDB fails to read whole (after a query failed: which file)."""
    import duckdb

    from ..history.sqlviews import _sql_text

    for f in files:
        try:
            con.execute(f"SELECT * FROM read_parquet({_sql_text(f)})").fetchall()
        except duckdb.Error:
            return f
    return None


def _remote_sql(opts: HistoryOptions, store) -> int:
    """`history sql` on an object store: its files copied through pyarrow's filesystem (the
    standard AWS variables) into a temporary folder, the query run there, the folder removed."""
    import dataclasses
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ttdash-sql-") as tmp:
        copy = store.local_copy(tmp)
        return sql(dataclasses.replace(opts, store=copy.root), opened=copy)


def sql(opts: HistoryOptions, opened=None) -> int:
    """Run a DuckDB query with views `runs` and `ops` over the store (local stores): the views
    of Store.sql_view, on which every reader agrees even after an add that was killed. A query
    with no result (only a comment, a SET) prints nothing (json: no columns, no rows); columns
    of one name are told apart (a, a_2) so that each keeps its own value."""
    from ..report.history import render_sql

    try:
        import duckdb
    except ImportError:
        raise TraceError(None, "`history sql` needs DuckDB: pip install 'ttdash[sql]' (or query "
                         "the Parquet files with any engine; see the README)") from None
    store = opened or _store(opts)
    if not store.local:  # read through pyarrow's filesystem into a local copy (_remote_sql)
        return _remote_sql(opts, store)
    con = duckdb.connect()
    runs_view = False
    scanned: list[str] = []
    try:
        for table in ("runs", "ops"):
            files = store.readable(table)  # a corrupt file is named and left out
            scanned += files
            for line in store.skipped:
                note(line)
            if files and (table == "runs" or runs_view):
                cur = con.execute(f"SELECT * FROM {store.sql_source(files)} LIMIT 0")
                con.execute(store.sql_view(table, files, [d[0] for d in cur.description]))
            runs_view = bool(files)  # ops only beside the runs they belong to
        cur = con.execute(opts.query or "")
        names = [d[0] for d in (cur.description or [])] if cur is not None else []
        rows = cur.fetchall() if names else []
    except duckdb.Error as exc:
        bad = None if isinstance(exc, (duckdb.ParserException, duckdb.BinderException,
                                       duckdb.CatalogException)) else _unreadable(con, scanned)
        if bad is not None:  # a file pyarrow read but DuckDB cannot (a damaged page header)
            raise TraceError(store._rel(bad), "corrupt (DuckDB cannot read it: "
                             f"{str(exc).splitlines()[0]}); remove or restore it") from None
        raise TraceError(None, f"SQL: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    if not names and opts.format != "json":
        return EXIT_OK
    columns: list[str] = []
    for name in names:  # `SELECT 1 AS a, 2 AS a` or a self-join: a, a_2
        n, unique = 1, name
        while unique in columns or (unique != name and unique in names):
            n += 1
            unique = f"{name}_{n}"
        columns.append(unique)
    write_output(opts.out, lambda out: render_sql(columns, rows, opts.format, out))
    return EXIT_OK
