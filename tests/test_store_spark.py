"""Spark reads what ttdash wrote (#49): the PySpark snippet of docs/commands/history.md runs in a
local Spark (one core, no UI, nothing downloaded) on a store ttdash made, and gives the runs and
per-run device time `history list --format json` gives. Slow tier: PySpark needs a Java runtime
and its session takes half a minute to start."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from history_fixture import make_store
from test_store_engines import _digits_run

from ttdash.cli import main

pytestmark = [
    pytest.mark.slow,
    # PySpark warns of pandas 3 at import; the snippet never converts to pandas
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
]

DOC = Path(__file__).resolve().parent.parent / "docs" / "commands" / "history.md"


def _doc_snippet() -> str:
    blocks = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
              if b.startswith("# Spark (PySpark)")]
    assert len(blocks) == 1, blocks
    return blocks[0]


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    scratch = tmp_path_factory.mktemp("spark")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # bind to loopback, not eth0
    session = (
        SparkSession.builder.master("local[1]").appName("ttdash-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "512m")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.local.dir", str(scratch))
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def test_the_docs_spark_snippet_gives_what_ttdash_gives(real, tmp_path, spark, capsys):
    store, ids, _ = make_store(tmp_path, [1.0, 1.04, 0.98], labels={"model": "clip"})
    ids.append(_digits_run(store))  # a run id of all digits stays a string
    assert main(["history", "list", "--store", store.uri, "-f", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"]
    want = {(r["run_id"], r["arch"]): r["device_time_us"] for r in listed}
    assert sorted(r for r, _ in want) == sorted(ids) and len(ids) == 4

    names = {"spark": spark}
    exec(_doc_snippet().replace("STORE", store.root), names)  # noqa: S102 (the docs' own code)

    per_run = {(r["run_id"], r["arch"]): r["device_time_us"] for r in names["per_run"].collect()}
    assert per_run == want  # the same runs, ids and device times, to the bit
    ops_per_run = {r["run_id"]: r["sum(device_time_us)"] for r in names["ops_per_run"].collect()}
    assert sorted(ops_per_run) == sorted(ids)
    for (run_id, _), us in want.items():
        assert ops_per_run[run_id] == pytest.approx(us, rel=1e-9), run_id
    by_model: dict[str, float] = {}
    for r in names["by_model"].collect():
        by_model[r["model"]] = by_model.get(r["model"], 0.0) + r["sum(device_time_us)"]
    models: dict[str, float] = {}
    for r in listed:
        models[r["labels"]["model"]] = models.get(r["labels"]["model"], 0.0) + r["device_time_us"]
    assert by_model == pytest.approx(models, rel=1e-9) and set(models) == {"clip", "oft"}
