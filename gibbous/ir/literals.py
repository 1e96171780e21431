"""The text of constants in the IR's text form: literals, constructor forms, import paths, and
the short names of dtypes.  Types print with these (``gibbous.ir.types.format_type``), and so do
operations (``gibbous.ir.printer``); ``gibbous.ir.parser`` reads them back."""

from __future__ import annotations

import json
import math
import typing as t

import numpy as np

from gibbous.ir.names import import_path

# Short dtype names, both ways.  Any other dtype prints as its quoted NumPy name.
DTYPE_SHORT = {
    "float64": "f64",
    "float32": "f32",
    "float16": "f16",
    "longdouble": "f128",
    "complex128": "c128",
    "complex64": "c64",
    "clongdouble": "c256",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint64": "u64",
    "uint32": "u32",
    "uint16": "u16",
    "uint8": "u8",
    "bool": "bool",
}
DTYPE_LONG = {v: k for k, v in DTYPE_SHORT.items()}


class UnprintableError(ValueError):
    """A constant that has neither a literal form nor an import path."""


def format_dtype(dtype: str) -> str:
    return DTYPE_SHORT.get(dtype) or json.dumps(dtype)


def format_path(obj: object) -> str:
    path = import_path(obj)
    if path is None:
        raise UnprintableError(
            f"{obj!r} has no import path; the text form can only name importable objects"
        )
    return path


def _format_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def _format_complex(z: complex) -> str:
    return f"complex({_format_float(z.real)}, {_format_float(z.imag)})"


def format_constant(value: object) -> str:
    """A constant as a literal, a constructor form, or an import path."""
    match value:
        case None:
            return "None"
        case bool():
            return repr(value)
        case int() if type(value) is int:
            return repr(value)
        case float() if type(value) is float:
            return _format_float(value)
        case complex() if type(value) is complex:
            return _format_complex(value)
        case str() if type(value) is str:
            return json.dumps(value)
        case bytes() if type(value) is bytes:
            return "b" + json.dumps(value.hex())
        case tuple() if type(value) is tuple:
            inner = ", ".join(map(format_constant, value))
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        case slice():
            parts = (value.start, value.stop, value.step)
            return "slice(" + ", ".join(map(format_constant, parts)) + ")"
        case np.ndarray() if type(value) is np.ndarray:
            # Nested lists lose the shape after a zero-length dimension: [] could be (0, 3).
            shape = ""
            if value.size == 0 and value.ndim > 1:
                shape = f", shape={format_constant(value.shape)}"
            return f"array({format_dtype(value.dtype.name)}, {format_constant_list(value)}{shape})"
        case np.generic() if value.dtype.name in DTYPE_SHORT:
            return f"{format_dtype(value.dtype.name)}({format_constant(value.item())})"
    if value is Ellipsis:
        return "..."
    return format_path(value)


def format_constant_list(a: np.ndarray[t.Any, t.Any]) -> str:
    if a.ndim == 0:
        return format_constant(a.item())
    # a[i, ...] is a 0-d array even for object dtype, where iterating gives the elements bare.
    return "[" + ", ".join(format_constant_list(a[i, ...]) for i in range(len(a))) + "]"
