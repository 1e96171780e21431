"""What the SciPy rules (``scipy_special``, ``scipy_linalg``, ``scipy_stats``) share: binding
operands to parameters, refusing complex numbers, zeroing gradients where a function is flat."""

from __future__ import annotations

import typing as t

import numpy as np

from gibbous.ir import types as T
from gibbous.library.common import CD, NT

TypeArgs = tuple[T.Type, ...]
TypeKwargs = dict[str, T.Type]


def is_complex(x: object) -> bool:
    if isinstance(x, np.ndarray):
        return bool(x.dtype.kind == "c")
    return isinstance(x, (complex, np.complexfloating))


def run_primal(
    fn: t.Callable[..., t.Any],
    first: tuple[object, ...],
    args: t.Sequence[CD],
    kwargs: t.Mapping[str, CD],
) -> t.Any:
    """The primal call ``fn(*first, *args, **kwargs)`` on the operands' primals."""
    return fn(*first, *(c.primal for c in args), **{k: c.primal for k, c in kwargs.items()})


def zero_where(cond: t.Any, value: t.Any) -> t.Any:
    """``value`` with zeros where ``cond`` holds; for scalars without making an array."""
    if isinstance(value, np.ndarray) or isinstance(cond, np.ndarray):
        return np.where(cond, 0, value)
    return type(value)(0) if cond else value


def position(
    names: tuple[str, ...], name: str, args: t.Sequence[CD], kwargs: t.Mapping[str, CD]
) -> int | None:
    """Where the value of parameter ``name`` is among the operands ``(first, *args,
    *kwargs.values())``: ``args`` are the parameters ``names`` by position.  By position, not
    by identity: one CoDual may be passed twice (``logsumexp(x, b=x)``)."""
    i = names.index(name)
    if i < len(args):
        return 1 + i
    return 1 + len(args) + list(kwargs).index(name) if name in kwargs else None


def rdata_item(dz: t.Any, i: int) -> t.Any:
    """Item ``i`` of a tuple's rdata (``NoTangent()`` when the whole rdata is)."""
    return dz[i] if isinstance(dz, tuple) else NT
