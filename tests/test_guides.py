"""The tuning guides' advice rules (#39 items 1-3, model.guides): tile padding, fusion
candidates, data formats. Each rule on real traces against figures computed here from the raw
CSV columns with pandas (the shapes' `padded[logical]` cells, datatypes, fidelity, order), a
negative case each, the JSON against its schema, the report's grouped lines."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from cli_inproc import run_main
from conftest import real_dir
from jsonschema import Draft202012Validator

from ttdash.format import fmt_us
from ttdash.model import Trace, Window
from ttdash.model.analysis.guides import KINDS, RULES, entries, summarise_guides
from ttdash.report.advice import guide_frames_of, guides_of, listed_sections
from ttdash.schemas import load

CLIP = "tt-perf-report__wh_clip_encoder_2.csv"
OFT = "tt-perf-report__bh20_oft.csv"
SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
PAUSE_US = 1000.0  # model.columns.PAUSE_ABOVE_US: longer gaps are host pauses, not at stake


def _view(name: str, columns: str = "all", path=None):
    trace = Trace.load(path or real_dir() / name, columns=columns)
    return trace.view(Window("all"))


def _entries(view, kind: str) -> pd.DataFrame:
    e = entries(guides_of(view))
    return e[e["kind"] == kind].reset_index(drop=True)


def _raw(name: str, path=None) -> pd.DataFrame:
    """The CSV in report order (HOST START TS, stable), its ID the CSV line number."""
    raw = pd.read_csv(path or real_dir() / name, low_memory=False)
    raw["ID"] = np.arange(2, len(raw) + 2)
    return raw.sort_values("HOST START TS", kind="stable").reset_index(drop=True)


def _cells(raw: pd.DataFrame, col: str) -> tuple[pd.Series, pd.Series]:
    """(padded, logical) of a V2 shape column, e.g. "32[19]" -> (32, 19)."""
    parts = raw[col].astype("string").str.extract(r"^(\d+)\[(\d+)\]$").astype(float)
    return parts[0], parts[1]


def _dims(raw: pd.DataFrame, t: str, which: int) -> list[pd.Series]:
    return [_cells(raw, f"{t}_{d}_PAD[LOGICAL]")[which] for d in "WZYX"]


def _at_stake(raw: pd.DataFrame) -> pd.Series:
    device = raw["DEVICE KERNEL DURATION [ns]"] / 1000
    gap = raw["OP TO OP LATENCY [ns]"] / 1000
    gap = gap.where((gap >= 0) & (gap <= PAUSE_US), 0.0).fillna(0.0)
    gap.iloc[0] = 0.0  # the first op has no gap
    return device.fillna(0.0) + gap


# ------------------------------------------------------------------ 1. tile padding
def _padding_expected(raw: pd.DataFrame) -> pd.DataFrame:
    code = raw["OP CODE"].astype(str)
    is_mm = code.str.contains("Matmul")
    work = []
    for which in (0, 1):  # padded, logical
        w0, z0, y0, x0 = _dims(raw, "INPUT_0", which)
        n = _cells(raw, "INPUT_1_X_PAD[LOGICAL]")[which]
        wo, zo, yo, xo = _dims(raw, "OUTPUT_0", which)
        out = wo * zo * yo * xo
        general = out.where(out.notna(), w0 * z0 * y0 * x0)
        work.append((w0 * z0 * y0 * x0 * n).where(is_mm, general))
    share = (1 - work[1] / work[0]).where(work[1] < work[0], 0.0).fillna(0.0)
    device_op = (raw["OP TYPE"] != "signpost") & ~code.str.contains(r"\(torch\)")
    tiled = device_op & ~code.str.contains("TilizeWithValPadding") & (share > 0)
    out = raw.loc[tiled, ["ID"]].copy()
    out["padded_us"] = (raw["DEVICE KERNEL DURATION [ns]"] / 1000 * share)[tiled]
    out["at_stake_us"] = _at_stake(raw)[tiled]
    return out


def test_padding_on_clip_sequence_19_padded_to_32():
    """wh_clip_encoder_2: 1,862 ops compute on the 19-token sequence padded to 32 (40.6% of an
    eltwise op's tile rows idle); IDs, padded time and time at stake as pandas finds them."""
    view = _view(CLIP)
    got = _entries(view, "padding_tile")
    raw = _raw(CLIP)
    want = _padding_expected(raw)
    assert len(got) == len(want) == 1862
    assert sorted(got["id"].tolist()) == sorted(want["ID"].tolist())
    assert got["saving_us"].sum() == pytest.approx(want["padded_us"].sum(), rel=1e-9)
    assert got["at_stake_us"].sum() == pytest.approx(want["at_stake_us"].sum(), rel=1e-9)
    assert "padded Y 19->32: 40.6% of its work" in set(got["message"])
    # TilizeWithValPadding ops that pad are counted with the rule, their whole time at stake
    code = raw["OP CODE"].astype(str)
    py, ly = _cells(raw, "OUTPUT_0_Y_PAD[LOGICAL]")
    px, lx = _cells(raw, "OUTPUT_0_X_PAD[LOGICAL]")
    tilize = code.str.contains("TilizeWithValPadding") & ((ly < py) | (lx < px))
    til = _entries(view, "padding_tilize")
    assert sorted(til["id"].tolist()) == sorted(raw.loc[tilize, "ID"].tolist())
    assert len(til) == 4
    assert til["at_stake_us"].sum() == pytest.approx(_at_stake(raw)[tilize].sum(), rel=1e-9)
    # negative: the ops with nothing padded are not named
    plain = set(raw["ID"]) - set(want["ID"]) - set(raw.loc[tilize, "ID"])
    assert plain and not plain & set(got["id"]) and not plain & set(til["id"])


def test_padding_needs_logical_sizes():
    """A V0 file (no `padded[logical]` cells) says nothing about padding: no padding entry,
    never a guess."""
    view = _view(SEG)
    assert not len(_entries(view, "padding_tile")) and not len(_entries(view, "padding_tilize"))


# ------------------------------------------------------------------ 2. fusion candidates
ELTWISE = re.compile(r"^(Binary|BinaryNg|Unary|Ternary|Where)(DeviceOperation)?$")


def _fusion_expected(raw: pd.DataFrame) -> dict[int, tuple[str, int, float]]:
    """{eltwise op ID: (kind, producer ID, DRAM bytes of the intermediate's write + read)},
    found row by row: the producer is the op one or two before (the nearer first) whose output
    shape (padded) is one of the op's two input shapes, itself a matmul or eltwise op."""
    code = raw["OP CODE"].astype(str)
    first = code.str.split().str[0]
    elt = first.str.match(ELTWISE.pattern).tolist()
    mm = code.str.contains("Matmul").tolist()

    def shape(t: str) -> list:
        d = _dims(raw, t, 0)
        return [None if any(pd.isna(v[i]) for v in d) else tuple(v[i] for v in d)
                for i in range(len(raw))]

    out, in0, in1 = shape("OUTPUT_0"), shape("INPUT_0"), shape("INPUT_1")
    ids = raw["ID"].tolist()
    dram = raw["OUTPUT_0_MEMORY"].astype(str).str.contains("DRAM").tolist()
    size = {"BFLOAT16": 2, "FLOAT32": 4}
    producer: dict[int, int] = {}
    for i in range(len(raw)):
        if not elt[i]:
            continue
        for k in (1, 2):
            j = i - k
            if j >= 0 and (elt[j] or mm[j]) and out[j] is not None \
                    and out[j] in (in0[i], in1[i]):
                producer[i] = j
                break
    want = {}
    for i, j in producer.items():
        head = j
        while head in producer:
            head = producer[head]
        nbytes = np.prod(out[j]) * size[raw["OUTPUT_0_DATATYPE"][j]] * 2 if dram[j] else 0.0
        other = in1[i] if in0[i] is not None and np.prod(in0[i]) == np.prod(out[j]) else in0[i]
        note = "" if other is None or not first[i].startswith("Binary") else \
            "full-size" if np.prod(other) >= np.prod(out[j]) else "broadcast"
        want[ids[i]] = ("fusion_matmul" if mm[head] else "fusion_eltwise", ids[j], nbytes, note)
    return want


def test_fusion_on_clip_matmul_then_its_bias_and_activation():
    """wh_clip_encoder_2: the eltwise ops on a matmul's output, as the row-by-row search finds
    them; the MLP's MinimalMatmulOp -> Unary -> BinaryNg -> BinaryNg chain belongs to the
    matmul; an eltwise op on some other tensor right after a matmul is not named."""
    view = _view(CLIP, columns="analysis")  # shapes and order only: the default read
    got = entries(guides_of(view))
    got = got[got["kind"].str.startswith("fusion")]
    raw = _raw(CLIP)
    want = _fusion_expected(raw)
    assert len(got) == len(want) == 384
    assert {(int(i), k) for i, k in zip(got["id"], got["kind"])} == \
        {(i, w[0]) for i, w in want.items()}
    by_id = got.set_index(got["id"].astype(int))
    for i, (_, producer, nbytes, note) in want.items():
        assert (note == "full-size") == ("full-size second operand" in by_id.loc[i, "message"])
        assert (note == "broadcast") == ("broadcast operand" in by_id.loc[i, "message"])
        assert re.match(rf"\w+ on the output of \w+ ID {producer}\b", by_id.loc[i, "message"])
        assert by_id.loc[i, "dram_bytes"] == nbytes
    stake = _at_stake(raw).set_axis(raw["ID"])
    assert got["at_stake_us"].sum() == pytest.approx(stake[list(want)].sum(), rel=1e-9)
    code = raw.set_index("ID")["OP CODE"]
    chain = by_id.loc[[59, 60, 61]]
    assert code[57] == "MinimalMatmulOp" and (chain["kind"] == "fusion_matmul").all()
    assert all("(chain from MinimalMatmulOp ID 57)" in m for m in chain["message"][1:])
    assert chain["message"].iloc[0] == "Unary on the output of MinimalMatmulOp ID 57; a DRAM round trip"
    assert by_id.loc[55, "message"].startswith("BinaryNg on the output of MinimalMatmulOp ID 54, "
                                               "with a full-size second operand (residual")
    assert [code[i].split("Device")[0] for i in (59, 60, 61)] == ["Unary", "BinaryNg", "BinaryNg"]
    # negative: ID 49, a BinaryNg right after Matmul ID 48, adds two tensors of another shape
    assert code[48] == "Matmul" and code[49] == "BinaryNgDeviceOperation"
    assert 49 not in by_id.index and 49 not in want
    # the estimate: the gap before each fused op plus its intermediate's DRAM traffic at peak
    peak = view.trace.arch.dram_gbps
    assert got["saving_us"].sum() == pytest.approx(
        got["gap_us"].sum() + got["dram_bytes"].sum() / (peak * 1e3), rel=1e-9)


def test_consecutive_eltwise_ops_on_one_tensor():
    """bh20_oft: eltwise chains without a matmul are fusion_eltwise, as the search finds them."""
    view = _view(OFT, columns="analysis")
    got = entries(guides_of(view))
    got = got[got["kind"].str.startswith("fusion")]
    want = _fusion_expected(_raw(OFT))
    assert len(got) == len(want) > 0
    assert {(int(i), k) for i, k in zip(got["id"], got["kind"])} == \
        {(i, w[0]) for i, w in want.items()}
    assert "fusion_eltwise" in set(got["kind"])
    by_id = got.set_index(got["id"].astype(int))
    notes = {w[3] for w in want.values()}
    assert {"full-size", "broadcast"} <= notes
    for i, w in want.items():
        assert (w[3] == "broadcast") == ("broadcast operand" in by_id.loc[i, "message"])


# ------------------------------------------------------------------ 3. data formats
def test_hifi4_matmuls_with_their_flop_bound_time():
    """wh_clip_encoder_2: the 514 HiFi4 matmuls; their FLOP-bound time is 2*M*K*N*batch at
    Wormhole's HiFi4 peak (74/72 TFLOP/s per core) on their cores, from the raw columns."""
    view = _view(CLIP, columns="analysis")
    got = _entries(view, "format_fidelity")
    raw = _raw(CLIP)
    mm = raw["OP CODE"].str.contains("Matmul") & (raw["MATH FIDELITY"] == "HiFi4")
    assert sorted(got["id"].tolist()) == sorted(raw.loc[mm, "ID"].tolist()) and len(got) == 514
    w0, z0, m, k = _dims(raw, "INPUT_0", 0)
    w1, z1, _, n = _dims(raw, "INPUT_1", 0)
    flops = 2 * m * k * n * np.fmax(w0, w1) * np.fmax(z0, z1)
    peak = 74 / 72 * 1e12 * raw["CORE COUNT"]
    device = raw["DEVICE KERNEL DURATION [ns]"] / 1000
    bound = np.minimum(flops / peak * 1e6, device)[mm]
    assert got["flop_bound_us"].sum() == pytest.approx(bound.sum(), rel=1e-6)
    assert got["saving_us"].sum() == pytest.approx(bound.sum() / 2, rel=1e-6)
    assert not any("accura" in m for m in got["message"])  # never a claim about accuracy
    assert set(got["message"]) == {"HiFi4 with BFLOAT16 weights: the guides use bfloat8_b "
                                    "weights at HiFi2"}
    # negative: no FLOAT32 operand in this trace
    assert not len(_entries(view, "format_float32"))


def test_lofi_and_hifi2_matmuls_are_not_named():
    """bh20_oft: its LoFi and HiFi2 matmuls are left alone; its one HiFi4 op (a conv) is named."""
    view = _view(OFT, columns="analysis")
    got = _entries(view, "format_fidelity")
    raw = _raw(OFT)
    lower = raw["OP CODE"].str.contains("Matmul") & raw["MATH FIDELITY"].isin(["LoFi", "HiFi2"])
    assert lower.sum() > 0 and not set(raw.loc[lower, "ID"]) & set(got["id"])
    assert got["id"].tolist() == [1620] and "Conv2d" in raw.set_index("ID")["OP CODE"][1620]


def test_float32_operands(tmp_path):
    """Three matmuls of the clip trace given FLOAT32 weights: exactly they are named, with the
    FLOAT32 tensors' DRAM bytes; the other matmuls are not."""
    src = real_dir() / CLIP
    df = pd.read_csv(src, low_memory=False)
    picked = df.index[df["OP CODE"] == "MinimalMatmulOp"][:3]
    df.loc[picked, "INPUT_1_DATATYPE"] = "FLOAT32"
    path = tmp_path / "clip_fp32.csv"
    df.to_csv(path, index=False)
    view = _view(CLIP, columns="analysis", path=path)
    got = _entries(view, "format_float32")
    assert sorted(got["id"].tolist()) == sorted((picked + 2).tolist())
    vol = [np.prod([float(str(df.loc[i, f"INPUT_1_{d}_PAD[LOGICAL]"]).split("[")[0])
                    for d in "WZYX"]) for i in picked]
    assert sorted(got["dram_bytes"].tolist()) == sorted(v * 4 for v in vol)
    assert all("FLOAT32 operands (in0 BFLOAT16, in1 FLOAT32, out BFLOAT16" in m
               for m in got["message"])


# ------------------------------------------------------------------ JSON, report, views
def test_guide_entries_and_summary_validate_and_agree():
    """Every entry frame's records validate against the schema's guide_advice; the JSON's
    advice_summary.guides counts them per kind, with each kind's guide."""
    view = _view(CLIP)
    schema = load("report")
    items = Draft202012Validator(schema["properties"]["guide_advice"])
    records = [r for f in guide_frames_of(view) for r in json.loads(f.to_json(orient="records"))]
    assert records and not list(items.iter_errors(records))
    summary = json.loads(run_main("report", str(real_dir() / CLIP), "-f", "json").stdout)
    assert not list(Draft202012Validator(schema).iter_errors(summary))
    rules = summary["advice_summary"]["guides"]["rules"]
    default = entries(guides_of(_view(CLIP, columns="analysis")))
    assert {r["kind"]: r["ops"] for r in rules} == default["kind"].value_counts().to_dict()
    assert all(r["guide"]["url"].startswith("https://github.com/tenstorrent/tt-metal/")
               for r in rules)
    assert {k.guide.title for k in KINDS.values()} == {
        "Tensor and Memory Layouts", "LLMs in TT-NN", "Matrix Engine",
        "Advanced Performance Optimizations for Models"}
    bad = dict(records[0], kind="not_a_rule")
    assert list(items.iter_errors([bad]))


def test_report_prints_one_line_per_rule():
    """bh20_oft's grouped advice starts with one line per guide rule (its ops, time at stake)
    and a line of its heaviest ops and guide; tt-perf-report's block follows unchanged."""
    out = run_main("report", str(real_dir() / OFT)).stdout
    block = out[out.index("\nTuning guides:"):out.index("\nAdvice (tt-perf-report's rules")]
    lines = block.strip().splitlines()
    doc = json.loads(run_main("report", str(real_dir() / OFT), "-f", "json").stdout)
    rules = doc["advice_summary"]["guides"]["rules"]
    assert len(lines) == 1 + 2 * len(rules) <= 13
    for rule, line in zip(rules, lines[1::2]):
        assert re.match(rf"\s*{rule['ops']:,} ops?  .* at stake \(", line), line
        assert f": {rule['kind']}: " in line
    assert all("guide: " in line for line in lines[2::2])
    full = run_main("report", str(real_dir() / OFT), "--advice", "full").stdout
    part = full[full.index("Advice from the tuning guides, every entry"):]
    assert sum(line.startswith("  ID ") for line in part.splitlines()) == \
        doc["advice_summary"]["guides"]["entries"]


def test_advice_view_lists_the_guide_rules():
    """The TUI's advice list (report.advice.listed_sections) carries the guide rules grouped and
    every guide entry with `f`."""
    view = _view(CLIP, columns="analysis")
    _, grouped = listed_sections(view, False, "f")
    titles = [t for t, _ in grouped]
    # the default read keeps the shapes' logical sizes (padding) and the trace repeats (warm-up)
    assert any(t.startswith("Tuning guides: 2,765 entries in 5 rules") for t in titles)
    _, full = listed_sections(view, True, "f")
    sections = dict(full)
    assert len(sections[next(t for t in sections if t.startswith("fusion_matmul:"))]) == 384
    assert len(RULES) == 4  # padding, fusion, formats, warm-up


def test_padding_from_numeric_logical_columns():
    """A read whose loader gives numeric `INPUT_0_Y_LOGICAL` etc. (only where some cell's
    logical size differs; the text cells dropped) finds the same padding as the text cells."""
    from ttdash.model.analysis.guide_rules import _logical_cell
    from ttdash.model.analysis.guides import guide_input

    view = _view(CLIP)
    g = guides_of(view)
    rows = g.rows.copy()
    for c in [c for c in rows.columns if c.endswith("_PAD[LOGICAL]")]:
        base = c.removesuffix("_PAD[LOGICAL]")
        logical = rows[c].map(_logical_cell).astype(float)
        if (logical < rows[base]).any():
            rows[base + "_LOGICAL"] = logical
        del rows[c]
    assert "INPUT_0_Y_LOGICAL" in rows and "INPUT_0_W_LOGICAL" not in rows
    again = entries(guide_input(g.ops, rows.assign(ID=g.ops["id"].to_numpy()), True,
                                view.trace.arch.dram_gbps))
    first = entries(g)
    for kind in ("padding_tile", "padding_tilize"):
        a, b = first[first["kind"] == kind], again[again["kind"] == kind]
        assert a["id"].tolist() == b["id"].tolist() and len(a)
        assert a["saving_us"].sum() == pytest.approx(b["saving_us"].sum(), nan_ok=True)
        assert a["at_stake_us"].sum() == pytest.approx(b["at_stake_us"].sum())


def test_rows_the_ops_cannot_be_matched_to_give_no_tensor_advice():
    """A live log's rows (no "ID") or no rows at all: no shape-based entry, no error; the
    fidelity rule still reads the ops' own columns."""
    from ttdash.model.analysis.guides import guide_input

    trace = Trace.load(real_dir() / OFT)
    view = trace.view(Window("all"))
    for ordered in (trace.ordered.drop(columns="ID"), trace.ordered.iloc[:0]):
        e = entries(guide_input(view.op_rows, ordered, view.merged, trace.arch.dram_gbps))
        assert e["kind"].tolist() == ["format_fidelity"]


def test_the_warmup_rule_leads_the_guides_and_leaves_the_steady_state_alone():
    """wh_clip_encoder_2 runs its encoder twice, the first time compiling: the warm-up is the
    summary's first guide line (before the per-op rules; nothing of the steady state at stake),
    its estimate the iterations' excess; a --steady-state or signpost window has no entry."""
    from ttdash.model.analysis.iterations import find_iterations

    view = _view(CLIP, columns="analysis")
    found = find_iterations(view.trace, view)
    assert found.warmup == 1 and found.steady_from_id == 938
    rules = summarise_guides(guides_of(view)).rules
    first = rules[0]
    assert first.kind.kind == "warmup" and first.ids == (938,) and first.at_stake_us == 0
    assert first.saving_us == pytest.approx(found.excess_us)
    assert first.detail and "iteration 1 is warm-up" in first.detail
    assert "warmup" not in {r.kind.kind for r in rules[1:]}
    steady = view.trace.view(Window("steady"))
    assert "warmup" not in set(entries(guides_of(steady))["kind"])
    text = run_main("report", str(real_dir() / CLIP)).stdout
    guides = text[text.index("Tuning guides:"):].splitlines()
    assert guides[1].lstrip().startswith(f"warmup ({fmt_us(found.excess_us)} above steady)")
