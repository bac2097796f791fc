#!/usr/bin/env python3
"""Print `ttdash doctor` on a fake host (tests/fake_host.py: a Wormhole n300 on a Gen3 x8 link,
82 C and clocked down, 4 GiB of HugePages) — the README's example output."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_host import Card, fake_host  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = fake_host(Path(tmp), [Card(card="n300", speed="8.0 GT/s PCIe", width=8,
                                         temp_c=82.0, aiclk=700, power_w=120.0)],
                        hugepages_1g=4)
        env.update({"ARCH_NAME": "wormhole_b0", "TT_METAL_HOME": tmp, "COLUMNS": "100",
                    "PATH": "/usr/bin:/bin"})
        r = subprocess.run([sys.executable, "-m", "ttdash", "doctor"], env=env,
                           capture_output=True, text=True)
        sys.stdout.write(r.stdout.replace(tmp, "/home/me/tt-metal"))
        print(f"(exit status {r.returncode})")


if __name__ == "__main__":
    main()
