#!/usr/bin/env python3
"""Print the README's "Limits and errors" table: what `ttdash report` does with every case of
the hostile-input corpus (tests/hostile_corpus.py). Usage: python scripts/limits_table.py"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hostile_corpus import CASES  # noqa: E402


def main() -> None:
    print("| input | `ttdash report` |")
    print("|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in CASES.items():
            path = Path(tmp) / f"{name}.csv"
            case.make(path)
            r = subprocess.run([sys.executable, "-m", "ttdash", "report", str(path), "-f", "json",
                                "--ignore-signposts"], capture_output=True, text=True,
                               timeout=120)
            if r.returncode == 0:
                doc = json.loads(r.stdout)
                t = doc["totals"]
                kinds = sorted({w["kind"] for w in doc["warnings"]})
                what = f"works: {t['ops']} ops" + (f", warnings: {', '.join(kinds)}"
                                                    if kinds else "")
            else:
                msg = r.stderr.strip().replace(str(path), "FILE").replace("|", "\\|")
                what = f"exit {r.returncode}: `{msg[:150]}`"
            print(f"| {name.replace('_', ' ')} | {what} |", flush=True)


if __name__ == "__main__":
    main()
