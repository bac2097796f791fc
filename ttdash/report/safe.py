"""Keeping untrusted text inert in exported files."""

from __future__ import annotations

import functools
import io
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from ..format import Coded
from ..model.read.text import clean_text

if TYPE_CHECKING:  # pandas and pyarrow are imported where used: markdown cells need neither
    import numpy as np
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

    if isinstance(s.dtype, pd.CategoricalDtype):  # its categories, not its rows
        fixed = [neutralise_formula(v) for v in s.cat.categories]
        if len(set(fixed)) == len(fixed):  # ("=x" and "'=x" both there: row by row below)
            return s.cat.rename_categories(fixed)
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
    chunk of rows into what is written (export_frame's types): memory stays a few chunks' worth
    above `frame`, whatever its length. A chunk's text is made by pyarrow in a thread (it
    releases the GIL) while the next chunk is prepared, and written in order: the same bytes
    as one writer's, in about half the time on two cores."""
    from concurrent.futures import Future, ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.csv as pacsv

    from ..model.progress import step

    binary = getattr(out, "buffer", None)
    sink = binary if binary is not None else io.BytesIO()
    if binary is not None:
        out.flush()

    def encode(table: pa.Table, header: bool) -> pa.Buffer:
        buf = pa.BufferOutputStream()
        pacsv.write_csv(table.cast(schema), buf, pacsv.WriteOptions(include_header=header))
        return buf.getvalue()

    schema = None
    pending: list[Future[pa.Buffer]] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        for start in range(0, max(len(frame), 1), chunk):
            step("writing csv", start, len(frame))
            part = frame.iloc[start:start + chunk]
            part = prepare(part) if prepare is not None else part
            part = part.assign(**{f: neutralise_series(part[f]) for f in text_columns
                                  if f in part.columns})
            if schema is None:
                table = pa.Table.from_pandas(part, preserve_index=False)
                # a column with no value in the first chunk is text (every other type shows);
                # a categorical's values are written (decoded in the encoding thread)
                schema = pa.schema([
                    f.with_type(pa.string()) if pa.types.is_null(f.type)
                    else f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type)
                    else f for f in table.schema])
            else:
                table = pa.Table.from_pandas(part, preserve_index=False)
            pending.append(pool.submit(encode, table, start == 0))
            del part, table
            while len(pending) > 1:  # one chunk encoded while the next is prepared
                sink.write(pending.pop(0).result())
        for done in pending:
            sink.write(done.result())
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
                 lines: bool = False, bare: bool = False, raw: bool = False) -> Any:
    """`frame` as JSON records (pandas' encoder: its number format, null for missing), floats
    with `double_precision` decimals, a share (SIGNIFICANT_FIELDS) with 6 significant digits.
    A whole number column with a missing cell goes through as Python ints and None: pandas < 3
    writes a nullable Int64 column that has a missing cell as floats ("51778.0"), so a number's
    form would depend on its neighbours (a streamed chunk with no gap printed "51778").
    `bare`: the records without the list's brackets (what a writer streams into a list; made
    without a copy of the text). `lines`: a record a line, as pandas writes them. `raw`
    (with `bare` or `lines`): the text's UTF-8 bytes (bytes or a pyarrow buffer), what a writer
    puts into a binary stream as it is. Made a column at a time (columns_json) when every
    column's type allows, else by pandas' encoder: the same bytes."""
    fast = columns_json(frame, double_precision, lines)
    if fast is not None:
        if raw and (bare or lines):
            return fast
        text = fast.to_pybytes().decode("utf-8")
        return text if bare or lines else "[" + text + "]"
    text = _encoded(frame, double_precision, lines, bare)
    return text.encode("utf-8") if raw and (bare or lines) else text


def _encoded(frame: pd.DataFrame, double_precision: int, lines: bool, bare: bool) -> str:
    """records_json's text by pandas' encoder (a frame columns_json does not take)."""
    first = str(frame.columns[0]) if len(frame.columns) else ""
    if lines and len(frame) and PLAIN_KEY.fullmatch(first):
        # pandas walks the text in Python-called code to cut it into lines; a record starts
        # with its first key, and `},{"first":` is never inside a string (whose quotes are
        # escaped): one replace
        text = _encoded(frame, double_precision, False, True)
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


# ------------------------------------------------------------------ records a column at a time
def _texts_joined(parts: list) -> object:
    """pyarrow's element-wise join of texts and literal strings (one per row), no separator."""
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(*parts, "")


#: A column from this many values, with at most half of them distinct, has each distinct
#: value's text made once and taken for its rows (a trace repeats its ops every iteration: their
#: sizes, cores, FLOPs, shares; a column of distinct values costs one hash pass more).
DISTINCT_FROM = 4096


def _per_distinct(values: Any, texts: Callable[[Any], Any], coded: bool = False) -> object:
    """`texts(values)` (a pyarrow string array, a text per value), made from each distinct
    value once when values repeat (DISTINCT_FROM); `coded`: as a Coded (the distinct values'
    texts and each value's position among them) when they do. `values`: a float64 numpy array
    (values told apart by their bits: -0.0 is not 0.0) or a pyarrow string array (nulls
    kept)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(values) < DISTINCT_FROM:
        return texts(values)
    if isinstance(values, np.ndarray):
        codes, bits = pd.factorize(np.ascontiguousarray(values).view(np.int64))
        if 2 * len(bits) > len(values):
            return texts(values)
        distinct, at = texts(bits.view(np.float64)), pa.array(codes)
    else:
        encoded = pc.dictionary_encode(values)
        if 2 * len(encoded.dictionary) > len(values):
            return texts(values)
        distinct, at = texts(encoded.dictionary), encoded.indices
    return Coded(distinct, at) if coded else pc.take(distinct, at)


def float_reprs(values: Any) -> object:
    """Each float as Python writes it (repr: the shortest text that reads back the same), a
    pyarrow string array, each distinct value once (_per_distinct: a trace's durations repeat
    every iteration)."""
    import numpy as np
    import pyarrow as pa

    def reprs(v: Any) -> object:
        return pa.array(list(map(repr, v.tolist())), pa.string())
    return _per_distinct(np.asarray(values, dtype=np.float64), reprs)


def _encoded_floats(v: np.ndarray, decimals: int) -> object:
    """Each float as pandas' encoder writes it (`decimals` decimals; null for NaN and
    infinities): the column written by the encoder as one JSON list, cut at
    its commas (a number holds none) into a pyarrow string array, no Python object per
    value."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pd.Series(v, dtype="float64", copy=False).to_json(
        orient="values", double_precision=decimals).encode("ascii")
    items = pc.split_pattern(pa.array([memoryview(text)[1:-1]], pa.binary()), b",")
    return items.flatten().view(pa.string())


#: What pandas' encoder escapes in a string (force_ascii=False): these, and every other control
#: character as \u00XX; the rest as it is.
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("/", "\\/"), ("\b", "\\b"), ("\f", "\\f"),
            ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))
_OTHER_CONTROLS = [chr(c) for c in range(32) if chr(c) not in "\b\f\n\r\t"]


def _string_texts(s: object, quoted: bool = True) -> object:
    """A pyarrow string array as JSON strings, escaped as pandas' encoder does and (`quoted`)
    in their quotes (nulls stay null)."""
    import pyarrow.compute as pc

    if pc.any(pc.match_substring_regex(s, r'[\x00-\x1f"\\/]')).as_py():
        for c, e in _ESCAPES:
            s = pc.replace_substring(s, c, e)
        if pc.any(pc.match_substring_regex(s, "[\x00-\x1f]")).as_py():
            for c in _OTHER_CONTROLS:
                s = pc.replace_substring(s, c, f"\\u{ord(c):04x}")
    return _texts_joined(['"', s, '"']) if quoted else s


@dataclass(frozen=True)
class Quoted:
    """A column's JSON strings without their quotes (no value missing): columns_json puts the
    quotes into the record's literal text around them."""
    texts: object


def _column_texts(s: pd.Series, name: str, decimals: int, fold: bool = True) -> object | None:
    """One column's values as JSON texts, as records_json writes them: a pyarrow string array
    (null where the value is missing), or one str when every row has the same text (a column
    with no value: "null"; not unless `fold`), or Quoted texts (strings, none missing), or
    (`fold`) Coded texts of values that repeat; None for a type it does not know (records_json
    then lets pandas write the frame)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        if not len(dtype.categories) or codes.max() < 0:
            return "null" if fold else None
        cats = _column_texts(pd.Series(dtype.categories), name, decimals, fold=False)
        if cats is None:
            return None
        if fold and codes.min() == codes.max():
            return str(cats[int(codes[0])])
        at = pa.array(codes, mask=codes < 0)
        return Coded(cats, at) if fold else pc.take(cats, at)
    kind = dtype.kind if isinstance(dtype, np.dtype) else ""
    if isinstance(dtype, pd.Int64Dtype) or kind in ("i", "u"):
        missing = s.isna().to_numpy() if isinstance(dtype, pd.Int64Dtype) else None
        if fold and missing is not None and missing.all():
            return "null"
        values = s.to_numpy(dtype="int64", na_value=0) if missing is not None else s.to_numpy()
        if fold and (missing is None or not missing.any()) and values.min() == values.max():
            return str(int(values[0]))
        return pc.cast(pa.array(values, mask=missing), pa.string())
    if kind == "b" or isinstance(dtype, pd.BooleanDtype):  # (nullable: a diff's within_noise)
        missing = s.isna().to_numpy() if kind != "b" else None
        if fold and missing is not None and missing.all():
            return "null"
        flags = s.to_numpy(dtype=bool, na_value=False) if missing is not None else s.to_numpy()
        return pc.if_else(pa.array(flags, mask=missing), "true", "false")
    if kind == "f":
        v = s.to_numpy(dtype="float64")
        if fold and np.isnan(v).all():
            return "null"
        if name in SIGNIFICANT_FIELDS:  # a share: 6 significant digits
            return _per_distinct(v, lambda u: pa.array(_share_texts(
                pd.Series(u, copy=False), "%.6g", None), type=pa.string()), fold)  # type: ignore
        return _per_distinct(v, lambda u: _encoded_floats(u, decimals), fold)
    if kind == "O" or isinstance(dtype, pd.StringDtype):
        try:
            text = pa.array(s.array if isinstance(dtype, pd.StringDtype) else s.to_numpy(),
                            type=pa.string(), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None  # not only text
        if fold and not text.null_count:
            least = pc.min_max(text)
            if least["min"] == least["max"]:
                return str(_string_texts(text.slice(0, 1))[0])
        if fold and not text.null_count:  # the quotes go into the record's literal text
            return Quoted(_per_distinct(text, lambda u: _string_texts(u, quoted=False), True))
        return _per_distinct(text, _string_texts, fold)
    return None


@functools.lru_cache(maxsize=1024)
def _key_text(name: str) -> str:
    """A column name as a JSON string, as pandas' encoder writes it (_string_texts)."""
    import pyarrow as pa

    return str(_string_texts(pa.array([name]))[0])


def columns_json(frame: pd.DataFrame, double_precision: int = JSON_DECIMALS,
                 lines: bool = False, raw: dict[str, Coded] | None = None) -> object | None:
    """records_json's records (bare: comma-separated; `lines`: each ends with a newline) made
    a column at a time, as UTF-8 bytes (a pyarrow buffer): each column's values turned into
    JSON texts by pyarrow and numpy, the records joined from them in pyarrow, with no Python
    object per record nor per value (a share excepted). The same bytes as pandas' encoder
    writes; None for a frame with a column type it does not handle, or no rows. `raw`: more
    fields after the frame's, each Coded JSON texts (json_objects': objects pandas would
    write)."""
    joined = record_texts(frame, double_precision, "\n" if lines else ",", raw)
    return None if joined is None else texts_buffer(joined, 0 if lines else 1)


def json_objects(objects: list, double_precision: int = JSON_DECIMALS) -> Any:
    """Each object (a dict, a list, None) as pandas' encoder writes it in a record, with
    `double_precision` decimals: a pyarrow string array (columns_json's `raw` texts)."""
    import pandas as pd
    import pyarrow as pa

    return pa.array([pd.Series([o], dtype=object).to_json(
        orient="values", double_precision=double_precision, force_ascii=False)[1:-1]
        for o in objects], type=pa.string())


def record_texts(frame: pd.DataFrame, double_precision: int = JSON_DECIMALS,
                 end: str = "", raw: dict[str, Coded] | None = None) -> Any:
    """Each row of `frame` as a JSON record (columns_json's), followed by `end`: a pyarrow
    string array, or None when columns_json would be."""
    parts = record_parts(frame, double_precision, end, raw)
    return None if parts is None else joined_texts(parts)


def records_later(frame: pd.DataFrame, double_precision: int = JSON_DECIMALS
                  ) -> Callable[[], object]:
    """records_json(frame, bare=True, raw=True) in two halves: the columns' texts made now (the
    half that holds the GIL), and the callable returned joins them into the records' bytes
    (pyarrow, without the GIL): what put_behind's thread runs while the next frame is made.
    The same bytes."""
    parts = record_parts(frame, double_precision, ",")
    if parts is None:
        data = records_json(frame, double_precision, bare=True, raw=True)
        return lambda: data
    return joined_later(parts)


def joined_later(parts: list) -> Callable[[], object]:
    """A callable (put_behind's item) that joins `parts` row by row (joined_texts) into UTF-8
    bytes less the last character (the last row's separator), when called; the pieces are let
    go once joined, not held while the bytes are written."""
    held = [parts]
    del parts
    return lambda: texts_buffer(joined_texts(held.pop()), 1)


def record_parts(frame: pd.DataFrame, double_precision: int = JSON_DECIMALS,
                 end: str = "", raw: dict[str, Coded] | None = None) -> list | None:
    """record_texts before its join: literal strings and pyarrow string arrays (a text per
    row) whose joining row by row (joined_texts) is each row's record and `end`; None when
    columns_json would be. `raw`: columns_json's."""
    import pyarrow as pa

    if not len(frame) or not len(frame.columns) or not frame.columns.is_unique \
            or not 0 < double_precision <= 15:
        return None
    parts: list[object] = []
    literal = ""  # the record's fixed text since the last column of varying texts
    columns = ((str(name), _column_texts(frame.iloc[:, k], str(name), double_precision))
               for k, name in enumerate(frame.columns))  # (a column's texts when it is its turn)
    for k, (name, texts) in enumerate(itertools.chain(columns, (raw or {}).items())):
        if texts is None:
            return None
        literal += ("{" if not k else ",") + _key_text(name) + ":"
        if isinstance(texts, str):
            literal += texts
        elif isinstance(texts, Quoted) and not isinstance(texts.texts, Coded):
            parts += [literal + '"', texts.texts]
            literal = '"'
        elif isinstance(texts, (Coded, Quoted)):
            coded = texts.texts if isinstance(texts, Quoted) else texts
            import pyarrow.compute as pc

            keyed = _texts_joined([literal + '"', coded.texts, '"'] if isinstance(texts, Quoted)
                                  else [literal, pc.fill_null(coded.texts, "null")])
            taken = pc.take(keyed, coded.at)
            parts.append(pc.fill_null(taken, literal + "null") if taken.null_count else taken)
            literal = ""
        else:
            import pyarrow.compute as pc

            parts += [literal, pc.fill_null(texts, "null")]
            literal = ""
    parts.append(literal + "}" + end)
    if len(parts) == 1:  # every row the same record
        parts.append(pa.array([""] * len(frame), type=pa.string()))
    return parts


def joined_texts(parts: list) -> Any:
    """Texts (pyarrow string arrays, a text per row) and literal strings joined row by row into
    one pyarrow string array."""
    import pyarrow as pa

    joined = _texts_joined(parts)
    return joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined


def padded(texts: Any, width: int, left: bool) -> Any:
    """A column's texts (a list, or Coded: its distinct texts, each padded once) padded to
    `width` (left-aligned: on the right) by code points, as `%` does: a pyarrow string array,
    or Coded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pad = pc.utf8_rpad if left else pc.utf8_lpad
    if isinstance(texts, Coded):
        return Coded(pad(texts.texts, width), texts.at)
    return pad(pa.array(texts, type=pa.string()), width)


def joined_rows(columns: list[Any], sep: str = "  ") -> Any:
    """Rows of padded cells (padded()), `sep` apart, each row without trailing whitespace and
    ended by a newline, as one UTF-8 buffer: what `"%-Ns  %Ms" % row` then `str.rstrip` give
    (Arrow's Unicode whitespace is Python's `str.isspace`), made in Arrow a column at a time."""
    import pyarrow.compute as pc

    parts: list[object] = []
    for k, texts in enumerate(columns):
        parts += ([sep] if k else []) + [texts.texts.take(texts.at)
                                         if isinstance(texts, Coded) else texts]
    rows = pc.utf8_rtrim_whitespace(joined_texts(parts))
    return texts_buffer(joined_texts([rows, "\n"]))


def texts_buffer(texts: Any, cut: int = 0) -> Any:
    """A pyarrow string array's texts one after the other, as one UTF-8 buffer (no copy), less
    its last `cut` bytes."""
    import numpy as np

    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32)
    start, end = offsets[texts.offset], offsets[texts.offset + len(texts)]
    return texts.buffers()[2].slice(start, end - start - cut)


def utf8_binary(out: TextIO) -> Any:
    """The binary stream under `out` when it has one that takes UTF-8, else None."""
    binary = getattr(out, "buffer", None)
    if binary is None or str(getattr(out, "encoding", "")).lower().replace("_", "-") != "utf-8":
        return None
    return binary


def put(out: TextIO, data: object) -> None:
    """UTF-8 bytes (records_json's `raw`: bytes or a pyarrow buffer) written to `out`: into the
    binary stream under it when it has one that takes UTF-8 (no str of the text made), else
    as text."""
    binary = utf8_binary(out)
    if binary is None:
        out.write(memoryview(data).tobytes().decode("utf-8"))  # type: ignore[arg-type]
        return
    out.flush()
    binary.write(data)

