"""Record tt-perf-report's outputs for the test suite's oracle (tests/golden/tt-perf-report/).

    python scripts/make_oracle_golden.py

Runs the tests that compare ttdash with tt-perf-report (ORACLE_TESTS) with TTDASH_ORACLE=record:
each tt-perf-report run they make is run for real and its output stored, keyed by its argv and
its inputs' contents (tests/oracle.py). The folder is emptied first, so files no test asks for
any more go away. Run it after changing an oracle test's inputs or options, or the pinned
tt-perf-report release, and commit the folder: the suite replays these files, and
tests/test_oracle_golden.py (marker `oracle`) re-runs tt-perf-report to check they are current.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "tt-perf-report"
#: every test file that runs tt-perf-report (through tests/oracle.py)
ORACLE_TESTS = ["tests/test_oracle.py", "tests/test_rules.py", "tests/test_multihost.py",
                "tests/test_sim.py"]


def main() -> int:
    shutil.rmtree(GOLDEN, ignore_errors=True)
    GOLDEN.mkdir(parents=True)
    env = {**os.environ, "TTDASH_ORACLE": "record"}
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *ORACLE_TESTS], cwd=ROOT, env=env)
    files = sorted(GOLDEN.glob("*.json.gz"))
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} recorded runs, {size / 1024:.0f} KiB in {GOLDEN.relative_to(ROOT)}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
