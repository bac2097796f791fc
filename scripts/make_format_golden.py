#!/usr/bin/env python3
"""Write the golden outputs of `ttdash report` in every format for a few real traces
(tests/golden/formats/), the files tests/test_format_golden.py compares with. Run it after a
change that means to change an output, and review the diff of the golden files in the commit.

Usage: python scripts/make_format_golden.py [--check]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "fixtures" / "real"
GOLDEN = ROOT / "tests" / "golden" / "formats"
#: Small real traces with what each format must carry: 8 devices and collectives; signposts in
#: the V1 header; corrupt timings and a metal-trace replay (data warnings).
TRACES = ("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
          "tt-perf-report__bh20_oft_integral_image_trace.csv",
          "tt-perf-report__bh_invalid_trace_decode_window.csv")
FORMATS = {"table": "txt", "csv": "csv", "json": "json", "markdown": "md",
           "perfetto": "perfetto.json"}


def render(name: str, fmt: str) -> str:
    """`ttdash report REAL/name -f fmt` as a pipe gets it, the fixtures' folder as {REAL}."""
    from ttdash.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["report", str(REAL / name), "-f", fmt, "--no-cache"])
    if rc != 0:
        raise SystemExit(f"{name} -f {fmt}: exit {rc}: {err.getvalue()}")
    return out.getvalue().replace(str(REAL), "{REAL}")


def golden_path(name: str, fmt: str) -> Path:
    return GOLDEN / f"{Path(name).stem}.{FORMATS[fmt]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    stale = []
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in TRACES:
        for fmt in FORMATS:
            text, path = render(name, fmt), golden_path(name, fmt)
            if args.check:
                if not path.exists() or path.read_text(encoding="utf-8") != text:
                    stale.append(path.name)
            else:
                path.write_text(text, encoding="utf-8")
                print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale: " + ", ".join(stale))
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
