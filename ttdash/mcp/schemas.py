"""The tools' input and output schemas. Outputs reuse the package's JSON Schemas
(ttdash/schemas/*.schema.json): a tool that returns a CLI JSON output returns it under that
output's schema; one that returns a bounded slice of it (the ops left out, a list cut to its
first N with the full count beside it) declares the output's schema less what it leaves out plus
the counts. Nothing here imports the MCP SDK."""

from __future__ import annotations

import copy
import math
from typing import Any

from ..schemas import load

INT: dict[str, Any] = {"type": "integer"}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
#: The largest whole number an integer argument takes when its schema names no smaller
#: maximum (2**53: every integer up to it is exact as a JSON number and a float64)
MAX_INT = 2 ** 53
#: The largest magnitude a number argument takes when its schema names no maximum
MAX_NUMBER = 1e300


def output(name: str, *, drop: tuple[str, ...] = (), add: dict[str, Any] | None = None,
           description: str | None = None) -> dict[str, Any]:
    """The package schema `name` as a tool's output schema: less the properties in `drop`, plus
    the required properties in `add`."""
    s = copy.deepcopy(load(name))
    s.pop("$schema", None)
    props: dict[str, Any] = s["properties"]
    for key in drop:
        props.pop(key, None)
    s["required"] = [k for k in s.get("required", []) if k not in drop]
    for key, sub in (add or {}).items():
        props[key] = sub
        s["required"].append(key)
    if description:
        s["description"] = description
    return s


def load_copy(name: str) -> dict[str, Any]:
    return copy.deepcopy(load(name))


def part(name: str, *path: str) -> dict[str, Any]:
    """A sub-schema of the package schema `name` (the report's op record: part("report", "ops",
    "items"))."""
    node: dict[str, Any] = load(name)
    for key in path:
        node = node["items"] if key == "items" else node["properties"][key]
    return copy.deepcopy(node)


def obj(props: dict[str, Any], required: tuple[str, ...] | None = None,
        description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props,
                           "required": list(props if required is None else required),
                           "additionalProperties": False}
    if description:
        out["description"] = description
    return out


# ------------------------------------------------------------------ input properties
def string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def integer(description: str, minimum: int | None = None, maximum: int | None = None,
            default: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "description": description}
    if minimum is not None:
        out["minimum"] = minimum
    out["maximum"] = MAX_INT if maximum is None else maximum
    if default is not None:
        out["default"] = default
    return out


def number(description: str, exclusive_minimum: float | None = None,
           minimum: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "number", "description": description}
    if exclusive_minimum is not None:
        out["exclusiveMinimum"] = exclusive_minimum
    if minimum is not None:
        out["minimum"] = minimum
    return out


def boolean(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": False}


#: The most items a list argument takes (more runs a side, labels)
MAX_ITEMS = 64


def strings(description: str, max_items: int = MAX_ITEMS) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "maxItems": max_items,
            "description": description}


#: The window options of every tool that reads a trace (the CLI's window flags).
WINDOW: dict[str, Any] = {
    "signpost": string("only the region after signpost NAME (NAME#K: its K-th occurrence) or "
                       "after the N-th signpost (--signpost)"),
    "start_signpost": string("ops after the first signpost named A (--start-signpost)"),
    "end_signpost": string("ops before the first signpost named B (--end-signpost)"),
    "perf_report_window": boolean("tt-perf-report's default window: the ops after the first "
                                  "signpost named like the last one (--perf-report-window)"),
    "replay": integer("only metal-trace replay session N (--replay)", minimum=0),
    "per_device": boolean("one row per device per op instead of merging devices "
                          "(--per-device)"),
    "arch": string("override the detected arch: wormhole_b0, blackhole_p150, ... (--arch)"),
    "pause_above_us": number("an op-to-op gap above this (us) is a host pause, shorter ones "
                             "are dispatch (--pause-above; default 1000)", exclusive_minimum=0),
}
PATH = string("a profiler CSV (ops_perf_results*.csv), a profiler or reports directory (its "
              "newest report) or a multi-host run's root; relative to the server's working "
              "directory")


def inputs(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required),
            "additionalProperties": False}


# ------------------------------------------------------------------ validation of arguments
def check_arguments(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """The first thing wrong with `args` under an input schema of this module (flat: types,
    enum, bounds, required, no unknown names), as one line; None when they fit. Our own check,
    so the message is the same whatever the SDK's release."""
    props: dict[str, Any] = schema["properties"]
    for name in args:
        if name not in props:
            return f"unknown argument {shown(name)} (known: {', '.join(props)})"
    for name in schema.get("required", []):
        if args.get(name) is None:
            return f"missing argument {name!r}"
    for name, value in args.items():
        if value is None:
            continue
        bad = _check_value(props[name], value)
        if bad:
            return f"argument {name!r}: {bad}"
    return None


def _check_value(spec: dict[str, Any], value: Any) -> str | None:
    kind = spec.get("type")
    if kind == "string" and not isinstance(value, str):
        return f"expected a string, got {shown(value)}"
    if kind == "string" and len(value) > spec.get("maxLength", len(value)):
        return f"{len(value):,} characters long; at most {spec['maxLength']:,}"
    if kind == "boolean" and not isinstance(value, bool):
        return f"expected true or false, got {shown(value)}"
    if kind in ("integer", "number"):
        bad = _check_number(spec, value, kind == "integer")
        if bad:
            return bad
    if kind == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"expected a list of strings, got {shown(value)}"
        if len(value) > spec.get("maxItems", MAX_ITEMS):
            return f"{len(value):,} items; at most {spec.get('maxItems', MAX_ITEMS)}"
    if "enum" in spec and value not in spec["enum"]:
        return f"{shown(value)} is not one of {', '.join(map(str, spec['enum']))}"
    return None


def _check_number(spec: dict[str, Any], value: Any, whole: bool) -> str | None:
    """A number argument against its schema, compared exactly (an int of any size is never
    converted to a float: 10**400 is too large, not an OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected {'a whole number' if whole else 'a number'}, got {shown(value)}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"expected a finite number, got {value!r}"
        if whole and not value.is_integer():
            return f"expected a whole number, got {value!r}"
    top = spec.get("maximum", MAX_INT if whole else MAX_NUMBER)
    if value < -top and "minimum" not in spec:
        return f"{shown(value)} is below the minimum {-top}"
    if "minimum" in spec and value < spec["minimum"]:
        return f"{shown(value)} is below the minimum {spec['minimum']}"
    if value > top:
        return f"{shown(value)} is above the maximum {top}"
    if "exclusiveMinimum" in spec and value <= spec["exclusiveMinimum"]:
        return f"{shown(value)} must be above {spec['exclusiveMinimum']}"
    return None


def shown(value: Any, limit: int = 60) -> str:
    """A value for an error line: its repr, cut (a 400-digit number, a 1 MB string); an int
    too long for repr (Python refuses past 4,300 digits) by its digit count."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 60:
        sign = "negative " if value < 0 else ""
        return f"a {sign}{len(format(abs(value), 'x')) * 4}-bit integer"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def normalized(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """`args` (checked) with the whole floats of integer arguments as ints (`limit: 5.0`)."""
    props: dict[str, Any] = schema["properties"]
    return {k: int(v) if isinstance(v, float) and props[k].get("type") == "integer" else v
            for k, v in args.items()}
