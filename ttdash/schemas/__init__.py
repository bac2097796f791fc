"""JSON Schemas (Draft 2020-12) of every `--format json` output, shipped with the package.

Each output carries ``"schema_version": SCHEMA_VERSION``. The version changes when a field is
removed or its meaning changes; an added field does not change it (a reader ignores what it does
not know). docs/reference/json.md is generated from these files (scripts/gen_docs.py).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_VERSION = 1

#: schema name -> the output it describes
NAMES = {
    "report": "ttdash report --format json",
    "report-summary": "ttdash report --summary --format json",
    "diff": "ttdash diff --format json",
    "history-list": "ttdash history list --format json",
    "history-trend": "ttdash history trend --format json",
    "history-check": "ttdash history check --format json",
    "history-sql": "ttdash history sql --format json",
    "doctor": "ttdash doctor --format json",
    "watch": "ttdash watch --once (json)",
    "demo": "ttdash demo --once",
}


@cache
def load(name: str) -> dict[str, Any]:
    """The schema `name` (a key of NAMES) as a dict."""
    if name not in NAMES:
        raise KeyError(name)
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
