"""JSON Schema validation with JSON's integers kept apart from its floats: under Draft 2020-12
an "integer" is any number with no fraction (7.0, 3.4e18 pass), so a count or an ID written as
a float, or a 64-bit hash rounded through a float, would pass a plain validator. Here an
"integer" must be a JSON integer (a Python int after json.loads)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, validators


def _is_int(checker: Any, instance: object) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


StrictValidator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int))


def strict_errors(schema: dict, doc: object) -> list[str]:
    """Where `doc` breaks `schema`, integers strict: 'path: message' each (none: valid)."""
    found = StrictValidator(schema).iter_errors(doc)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in sorted(found, key=lambda e: list(map(str, e.absolute_path)))]
