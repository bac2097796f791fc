"""A fake ttnn workload for `ttdash run` tests: installs ttdash's realtime hook on the fake ttnn
(tests/fake_ttnn on PYTHONPATH), has it deliver record batches from ttnn's "receiver thread", and
exits without uninstalling (the hook's atexit does)."""

from __future__ import annotations

import sys

import ttnn

from ttdash.hooks import ttnn as hook


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    ok = hook.install()
    print(f"hook installed: {ok}", flush=True)
    recs = ttnn.device.make_records(1024, n)
    half = n // 2
    ttnn.device.emit([ttnn.device.ProgramRealtimeRecordBatch(recs[:half]),
                      ttnn.device.ProgramRealtimeRecordBatch(recs[half:], dropped=2)])
    print(f"rows written: {hook.status().get('rows')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
