"""Does a tangent fit a value: the check behind the errors for a wrong ``ybar`` or ``dy``.

A cotangent handed in by a user (``value_and_pullback``'s ``ybar``, a derived pullback's
``dy``) that does not have the result's structure would otherwise reach NumPy's broadcasting
or ``increment``'s adders, whose errors say nothing about the user's mistake, or be ignored
(a float for an array result: a zero gradient).  ``mismatch`` names the first place where the
given tangent differs from the tangent the value has (``zero_tangent``): its path in the
structure, what was expected (kind, length, shape, dtype) and what was given.

Numbers are matched leniently: any real number serves a real scalar, any number a complex
one; an array serves an array of the same shape whose dtype casts to the value's (no complex
into real).  Containers are matched strictly (a tuple for a tuple, a list for a list), since
a tuple given for a list's tangent was silently ignored.
"""

from __future__ import annotations

import numbers
import typing as t

import numpy as np

from gibbous.tangents.model import NO_TANGENT, MutableTangent, Tangent, zero_rdata, zero_tangent

__all__ = ["mismatch", "rdata_mismatch"]


def mismatch(value: object, given: object, path: str = "") -> str | None:
    """Where and how ``given`` is not a tangent of ``value``; ``None`` if it is one."""
    return _mismatch(zero_tangent(value), given, path)


def rdata_mismatch(value: object, given: object, path: str = "") -> str | None:
    """Where and how ``given`` is not the rdata of a tangent of ``value``."""
    return _mismatch(zero_rdata(value), given, path)


def _mismatch(expected: object, given: object, path: str) -> str | None:
    where = path or "it"
    if expected is NO_TANGENT:
        if given is NO_TANGENT:
            return None
        return f"{where} should be NoTangent(), got {_show(given)}"
    if isinstance(expected, np.ndarray):
        return _array(expected, given, where)
    if isinstance(expected, (float, complex, np.floating, np.complexfloating)):
        return _scalar(expected, given, where)
    if isinstance(expected, (tuple, list)):
        kind = type(expected)
        if type(given) is not kind and not (kind is tuple and isinstance(given, tuple)):
            return f"{where} should be a {kind.__name__} of {len(expected)} tangents, got {_show(given)}"
        items = t.cast(t.Sequence[object], given)
        if len(items) != len(expected):
            return (
                f"{where} should be a {kind.__name__} of {len(expected)} tangents, got one of "
                f"{len(items)}"
            )
        for i, (e, g) in enumerate(zip(expected, items)):
            found = _mismatch(e, g, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(expected, dict):
        if not isinstance(given, dict):
            return f"{where} should be a dict with keys {sorted(map(repr, expected))}, got {_show(given)}"
        if given.keys() != expected.keys():
            return (
                f"{where} should have the keys {sorted(map(repr, expected))}, got "
                f"{sorted(map(repr, given))}"
            )
        for k, e in expected.items():
            found = _mismatch(e, given[k], f"{path}[{k!r}]")
            if found is not None:
                return found
        return None
    if isinstance(expected, (Tangent, MutableTangent)):
        kind_name = type(expected).__name__
        if type(given) is not type(expected):
            return f"{where} should be a {kind_name} with fields {sorted(expected.fields)}, got {_show(given)}"
        fields = given.fields
        if fields.keys() != expected.fields.keys():
            return f"{where} should have the fields {sorted(expected.fields)}, got {sorted(fields)}"
        for k, e in expected.fields.items():
            found = _mismatch(e, fields[k], f"{path}.{k}")
            if found is not None:
                return found
        return None
    if type(given) is not type(expected):
        return f"{where} should be a {type(expected).__name__}, got {_show(given)}"
    return None


def _scalar(expected: object, given: object, where: str) -> str | None:
    complex_ok = isinstance(expected, (complex, np.complexfloating))
    want = "a complex number" if complex_ok else "a real number"
    if isinstance(given, np.ndarray) and given.ndim == 0:
        given = given[()]
    if isinstance(given, bool) or not isinstance(given, numbers.Number):
        return f"{where} should be {want} (the result there is a {type(expected).__name__}), got {_show(given)}"
    if not complex_ok and isinstance(given, numbers.Complex) and not isinstance(given, numbers.Real):
        return f"{where} should be {want}, got the complex {given!r}"
    return None


def _array(expected: np.ndarray[t.Any, t.Any], given: object, where: str) -> str | None:
    want = f"an array of shape {expected.shape} and dtype {expected.dtype}"
    if not isinstance(given, np.ndarray):
        if expected.ndim == 0 and isinstance(given, numbers.Number):
            return _scalar(expected[()], given, where)
        return f"{where} should be {want} (like the result there), got {_show(given)}"
    if given.shape != expected.shape:
        return f"{where} should be {want}, got one of shape {given.shape}"
    if given.dtype.kind not in "biufc" or not np.can_cast(
        given.dtype, expected.dtype, casting="same_kind"
    ):
        return f"{where} should be {want}, got one of dtype {given.dtype}"
    return None


def _show(x: object) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape} and dtype {x.dtype}"
    if isinstance(x, (tuple, list, dict)):
        return f"a {type(x).__name__} of {len(x)} items"
    text = repr(x)
    return f"{type(x).__name__} {text}" if len(text) <= 40 else type(x).__name__
