"""Why it is slow, against the profiler's performance model (model.perfmodel): the headline a
report leads with, the section after "where the time goes", and JSON's `performance_model`."""

from __future__ import annotations

from typing import Any

from ..format import fmt_us
from ..model import View
from ..model.perfmodel import ModelSummary, ranking, summarise

#: Groups named in the section (the rest counted); JSON has them all.
TOP_GROUPS = 8


def model_summary(view: View) -> ModelSummary | None:
    if "pm_eff_pct" not in view.ops:
        return None
    return summarise(view.op_rows)


def headline(view: View, s: ModelSummary | None = None) -> str | None:
    """One sentence: how much device time is above the model and which op code holds most of
    it (None when no op is modelled)."""
    s = s or model_summary(view)
    if s is None or not s.modelled_ops:
        return None
    top = ranking(view.op_rows).iloc[0]
    return (f"{fmt_us(s.recoverable_us)} of {fmt_us(s.device_us)} device time "
            f"({s.recoverable_share_pct:.0f}%) is above the profiler's performance model; "
            f"{top['group']} holds {fmt_us(top['recoverable_us'])} of it, at "
            f"{top['median_eff_pct']:.0f}% of its model (median over {int(top['ops']):,} ops)")


def why_lines(view: View) -> list[str]:
    s = model_summary(view)
    if s is None or not s.modelled_ops:
        return []
    r = ranking(view.op_rows)
    eff = s.ideal_us / s.modelled_us * 100 if s.modelled_us > 0 else 0.0
    out = ["", f"Against the performance model (PM IDEAL): {s.modelled_ops:,} of "
               f"{s.device_ops:,} device ops are modelled ({fmt_us(s.modelled_us)} of "
               f"{fmt_us(s.device_us)} device time) and run at {eff:.0f}% of their model "
               f"overall; {fmt_us(s.recoverable_us)} is above it "
               f"({s.recoverable_share_pct:.1f}% of device time)"]
    out.append(f"  {'Recoverable':>11}  {'Share':>6}  {'Median eff':>10}  {'Ops':>6}  Op code")
    for g in r.head(TOP_GROUPS).itertuples(index=False):
        out.append(f"  {fmt_us(g.recoverable_us):>11}  {g.recoverable_share_pct:5.1f}%  "
                   f"{g.median_eff_pct:9.1f}%  {int(g.ops):>6,}  {g.group}")
    if len(r) > TOP_GROUPS:
        rest = r.iloc[TOP_GROUPS:]
        out.append(f"  {fmt_us(rest['recoverable_us'].sum()):>11}  "
                   f"{rest['recoverable_share_pct'].sum():5.1f}%  {'':>10}  "
                   f"{int(rest['ops'].sum()):>6,}  in {len(rest):,} more op codes")
    out.append(f"If every modelled op reached {s.target_pct:g}% of its model: "
               f"-{fmt_us(s.target_saving_us)} ({s.target_saving_us / s.device_us * 100:.1f}% of "
               f"device time). {s.device_ops - s.modelled_ops:,} device ops have no model "
               "(unmodelled: not known to be fine)"
               + (f"; {s.faster_than_model:,} run faster than their model"
                  if s.faster_than_model else ""))
    return out


def as_dict(view: View) -> dict[str, Any] | None:
    s = model_summary(view)
    if s is None:
        return None
    r = ranking(view.op_rows)
    return {**s.as_dict(), "headline": headline(view, s),
            "by_op_code": [{k: (round(float(v), 6) if k != "group" and k != "ops" else
                                (int(v) if k == "ops" else str(v)))
                            for k, v in row.items()} for row in r.to_dict("records")]}
