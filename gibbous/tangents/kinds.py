"""What the tangent model asks of the fdata and rdata a rule returns.

``fdata_problem`` and ``rdata_problem`` compare a rule's fdata and rdata with the model's
(docs/tangents.md) part by part: the zero tangent of the primal says what kind each part must
be.  Unlike ``tangent_check`` (lenient, for tangents users hand in), the kinds must match
exactly: a rule's output is read by generated code that assumes them.  Debug rules
(``build_rrule(..., debug=True)``) and ``gibbous.testing`` both check with these, so they
live with the model rather than with the testing tools.
"""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir.types import typeof
from gibbous.tangents.model import (
    NO_TANGENT,
    MutableTangent,
    Tangent,
    fdata_of,
    zero_rdata,
    zero_tangent,
)

__all__ = ["describe", "fdata_problem", "rdata_problem"]

_INEXACT = (float, complex, np.floating, np.complexfloating)


def describe(x: object) -> str:
    """A value's kind for messages: ``ndarray float64[3, 4] strides (32, 8)``, ``float``..."""
    if isinstance(x, np.ndarray):
        return f"ndarray {x.dtype}{list(x.shape)} strides {x.strides}"
    if x is NO_TANGENT:
        return "NoTangent()"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of {len(x)}"
    return type(x).__name__


def fdata_problem(x: object, fdata: object, path: str) -> str | None:
    """Why ``fdata`` is not a valid fdata of ``x``, or None."""
    return _mismatch(fdata_of(zero_tangent(x)), fdata, path, set())


def rdata_problem(x: object, rdata: object, path: str) -> str | None:
    """Why ``rdata`` is not a valid rdata of ``x``, or None."""
    return _mismatch(zero_rdata(x), rdata, path, set())


def _mismatch(expected: t.Any, got: t.Any, path: str, seen: set[int]) -> str | None:
    def wrong(what: str) -> str:
        return f"{path} is {describe(got)},\nwhere the tangent model wants {what}"

    if expected is NO_TANGENT:
        return None if got is NO_TANGENT else wrong("NoTangent()")
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray) or type(got) is not np.ndarray:
            return wrong(f"a plain ndarray ({describe(expected)})")
        if (got.shape, got.dtype, got.strides) != (
            expected.shape,
            expected.dtype,
            expected.strides,
        ):
            return wrong(f"{describe(expected)}, like the primal")
        return None
    if isinstance(expected, _INEXACT):
        if isinstance(got, _INEXACT) and typeof(got) == typeof(expected):
            return None
        return wrong(f"a {typeof(expected)} number ({type(expected).__name__})")
    if id(expected) in seen:
        return None
    seen.add(id(expected))
    # By here ``got`` has ``expected``'s type and keys, so its parts are read the same way.
    parts: dict[str, tuple[t.Any, t.Any]]
    if isinstance(expected, (Tangent, MutableTangent)):
        if type(got) is not type(expected):
            return wrong(type(expected).__name__)
        if got.fields.keys() != expected.fields.keys():
            return wrong(f"{type(expected).__name__} of fields {sorted(expected.fields)}")
        parts = {f".{n}": (v, got.fields[n]) for n, v in expected.fields.items()}
    elif isinstance(expected, (tuple, list, dict)):
        if type(got) is not type(expected) or len(got) != len(expected):
            return wrong(describe(expected))
        if isinstance(expected, dict) and t.cast(dict[t.Any, t.Any], got).keys() != expected.keys():
            return wrong(f"a dict with keys {list(expected)}")
        keys = expected if isinstance(expected, dict) else range(len(expected))
        parts = {f"[{k!r}]": (expected[k], got[k]) for k in keys}
    else:
        return None
    for where, (value, part) in parts.items():
        found = _mismatch(value, part, path + where, seen)
        if found is not None:
            return found
    return None
