"""Keeping untrusted text inert in exported files."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from ..model.text import clean_text

if TYPE_CHECKING:  # pandas and pyarrow are imported where used: markdown cells need neither
    import pandas as pd

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(v: object) -> object:
    """A text cell a spreadsheet would evaluate gets a leading apostrophe; numbers pass."""
    if isinstance(v, str) and v.startswith(FORMULA_PREFIXES):
        return "'" + v
    return v


def neutralise_series(s: pd.Series) -> pd.Series:
    """`neutralise_formula` over a column as text, worked out once per distinct value."""
    import pandas as pd

    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    st = pd.Series(uniques, dtype=object).astype("string")
    risky = st.str.match(r"^[=+\-@\t\r]").fillna(False)
    fixed = st.where(~risky, "'" + st)
    return pd.Series(fixed.array.take(codes, allow_fill=True), index=s.index)


#: What GitHub turns into a ping or a cross-reference in a comment: @user, @org/team, #123,
#: GH-123 (owner/repo#123 through its "#"). A zero-width space after the "@" or "#" (as an
#: entity: visible in the raw text) leaves the text as it reads and links nothing.
MD_MENTION_RE = re.compile(r"(@(?=[A-Za-z0-9])|#(?=[0-9])|\bGH-(?=[0-9]))", re.IGNORECASE)
ZWSP = "&#8203;"


def md_cell(v: object) -> str:
    """Untrusted text for markdown (a table cell, a list item, a heading): one line, no control
    or bidi characters, nothing live. Pipes, backslashes, HTML tags, autolinks, entities and
    code spans escaped; the "]" of a link or image (`[x](y)`, `![x](y)`, `[x][y]`) escaped;
    mentions and issue references broken; a leading formula character neutralised."""
    s = "" if v is None else str(clean_text(str(v).replace("\n", " ").replace("\r", " ")))
    # Backslash escapes (not entities): "BF16 => BF16" stays readable in the raw text, and an
    # escaped "<" can never open an HTML tag nor an autolink, an escaped "&" an entity.
    s = s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "\\<").replace(">", "\\>")
    s = s.replace("`", "\\`").replace("&", "\\&")
    # A link's text ends at a "]" followed by "(" or "["; "[bold]x[/]" stays as it reads.
    s = s.replace("](", "\\](").replace("][", "\\][")
    s = MD_MENTION_RE.sub(lambda m: m.group(1) + ZWSP, s)
    return str(neutralise_formula(s)) if s[:1] in "=+@" else s


def md_table(head: list[str], rows: list[list[str]], left: tuple[int, ...]) -> str:
    """A markdown table; the left-aligned (text) columns carry untrusted text and go through
    md_cell, the others are numbers we formatted (a leading "+" must stay as it is)."""
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" if i in left else "---:" for i in range(len(head))) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(md_cell(x) if i in left else x for i, x in enumerate(r))
                     + " |")
    return "\n".join(lines) + "\n"


def write_csv(frame: pd.DataFrame, text_columns: tuple[str, ...], out: TextIO,
              chunk: int = 65_536,
              prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> None:
    """Write `frame` as CSV with its text columns formula-neutralised, streamed by pyarrow
    (straight into the binary stream under `out` when there is one). `prepare` turns each
    chunk of rows into what is written (export_frame's types): memory stays one chunk's worth
    above `frame`, whatever its length."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from ..model.progress import step

    binary = getattr(out, "buffer", None)
    sink = binary if binary is not None else io.BytesIO()
    if binary is not None:
        out.flush()
    writer = None
    try:
        for start in range(0, max(len(frame), 1), chunk):
            step("writing csv", start, len(frame))
            part = frame.iloc[start:start + chunk]
            part = prepare(part) if prepare is not None else part
            part = part.assign(**{f: neutralise_series(part[f]) for f in text_columns
                                  if f in part.columns})
            if writer is None:
                table = pa.Table.from_pandas(part, preserve_index=False)
                # a column with no value in the first chunk is text (every other type shows)
                schema = pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f
                                    for f in table.schema])
                writer = pacsv.CSVWriter(sink, schema)
            else:
                table = pa.Table.from_pandas(part, preserve_index=False, schema=schema)
            writer.write_table(table.cast(schema))
    finally:
        if writer is not None:
            writer.close()
    if binary is None:
        out.write(sink.getvalue().decode("utf-8"))
    else:
        binary.flush()


#: JSON numbers (docs/formats.md): floats have 6 decimals; shares (`*_pct` of a total, which can
#: be 1e-6 % of a long run) keep 6 significant digits instead.
JSON_DECIMALS = 6
SIGNIFICANT_FIELDS = ("total_pct", "share_pct")


def json_number(v: object, key: str = "") -> object:
    """One float as the JSON outputs write it: 6 decimals, or 6 significant digits for a share
    (`key` in SIGNIFICANT_FIELDS); other values as they are."""
    if isinstance(v, float) and v == v and v not in (float("inf"), float("-inf")):
        return float(f"{v:.6g}") if key in SIGNIFICANT_FIELDS else round(v, JSON_DECIMALS)
    return v


def json_clean(obj: object, key: str = "") -> object:
    """A JSON document (dicts, lists, numbers) with every float written as json_number says:
    no 121.55499999999999."""
    if isinstance(obj, dict):
        return {k: json_clean(v, k) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_clean(v, key) for v in obj]
    return json_number(obj, key)


#: A column name pandas' encoder writes as it is (no escape: no quote, backslash, slash, control
#: or non-ASCII character), so that `"name":` is its key in the text.
PLAIN_KEY = re.compile(r"[A-Za-z0-9 _.%()\[\]#+-]+")


def records_json(frame: pd.DataFrame, double_precision: int = JSON_DECIMALS,
                 lines: bool = False, bare: bool = False) -> str:
    """`frame` as JSON records (pandas' encoder: its number format, null for missing), floats
    with `double_precision` decimals, a share (SIGNIFICANT_FIELDS) with 6 significant digits.
    A whole number column with a missing cell goes through as Python ints and None: pandas < 3
    writes a nullable Int64 column that has a missing cell as floats ("51778.0"), so a number's
    form would depend on its neighbours (a streamed chunk with no gap printed "51778").
    `bare`: the records without the list's brackets (what a writer streams into a list; made
    without a copy of the text). `lines`: a record a line, as pandas writes them."""
    first = str(frame.columns[0]) if len(frame.columns) else ""
    if lines and len(frame) and PLAIN_KEY.fullmatch(first):
        # pandas walks the text in Python-called code to cut it into lines; a record starts
        # with its first key, and `},{"first":` is never inside a string (whose quotes are
        # escaped): one replace
        text = records_json(frame, double_precision, bare=True)
        return text.replace(f'}},{{"{first}":', f'}}\n{{"{first}":') + "\n"
    out = frame
    for name in frame.columns:
        s = frame[name]
        if str(s.dtype) == "Int64" and s.hasnans:
            if out is frame:
                out = frame.copy(deep=False)
            out[name] = s.astype(object).where(s.notna(), None)
    shares = [str(c) for c in out.columns
              if c in SIGNIFICANT_FIELDS and out[c].dtype.kind == "f"]
    names = [str(c) for c in out.columns]
    if len(shares) == 1 and len(names) > 1 and PLAIN_KEY.fullmatch(shares[0]):
        at = names.index(shares[0])
        after = names[at + 1] if at + 1 < len(names) else None
        if after is not None and PLAIN_KEY.fullmatch(after):
            text = _share_spliced(out, shares[0], after, at == 0, double_precision, lines,
                                  bare and not lines)
            if text is not None:
                return text
    text = _shares_unquoted(out, shares, double_precision, lines)
    return text[1:-1] if bare and not lines else text


def _share_texts(s: pd.Series, form: str, missing: str) -> list[str]:
    """`form` % each value of a share column with 6 significant digits ("%.6g" in it), or
    `missing` for a value that is not finite."""
    import numpy as np

    v = s.to_numpy(dtype="float64", na_value=np.nan)
    ok = np.isfinite(v)
    if ok.all():
        return list(map(form.__mod__, v.tolist()))
    text = np.full(len(v), missing, dtype=object)
    text[ok] = list(map(form.__mod__, v[ok].tolist()))
    return text.tolist()


def _share_spliced(frame: pd.DataFrame, name: str, after: str, first: bool,
                   double_precision: int, lines: bool, bare: bool) -> str | None:
    """records_json of a frame with one share column `name` followed by the column `after`:
    the records without the share, cut where each one's `after` key is (`,"after":`, or
    `{"after":` when the share comes first: a quote is escaped inside a string, so this is
    only ever the key) and joined again with the share in its place. None when the cuts are
    not one per record."""
    text = frame.drop(columns=[name]).to_json(orient="records", lines=lines,
                                              double_precision=double_precision,
                                              force_ascii=False)
    lead = "{" if first else ","
    parts = text.split(f'{lead}"{after}":')
    if len(parts) != len(frame) + 1:
        return None
    if bare:  # the brackets off the first and last cut (short), not off the whole text
        parts[0] = parts[0][1:]
        parts[-1] = parts[-1][:-1]
    pieces = [""] * (2 * len(parts) - 1)
    pieces[::2] = parts
    pieces[1::2] = _share_texts(frame[name], f'{lead}"{name}":%.6g,"{after}":',
                                f'{lead}"{name}":null,"{after}":')
    return "".join(pieces)


def _shares_unquoted(frame: pd.DataFrame, shares: list[str], double_precision: int,
                     lines: bool) -> str:
    """records_json with the shares written as text by the encoder, then unquoted."""
    out = frame.copy(deep=False) if shares else frame
    for name in shares:
        out[name] = _share_texts(frame[name], "%.6g", None)  # type: ignore[arg-type]
    text = out.to_json(orient="records", lines=lines, double_precision=double_precision,
                       force_ascii=False)
    for name in shares:  # "total_pct":"1.5e-05" -> "total_pct":1.5e-05 (a key's quotes are
        # never inside a JSON string, where they are escaped; the value holds no quote)
        key = f'"{name}":'
        head, *rest = text.split(key + '"')
        text = head + "".join(key + part.replace('"', "", 1) for part in rest)
    return text
