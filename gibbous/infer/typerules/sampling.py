"""Abstract sampling: type rules that run the callable on representative values.

Most numeric rules are not written out by hand: for callables whose
result type depends only on the classes, dtypes and ranks of the arguments (and on constant
arguments), the rule calls the callable itself on one representative value per class (``3``
and ``np.int64(3)`` for ``i64``, a ``(1,)*ndim`` array of ones for an array) and joins the
types of the results.  That is NumPy's and Python's own promotion, NEP 50 weak scalars
included, with no table to drift.  A combination that raises ``TypeError`` contributes nothing
(type errors depend on types, not values); one that raises anything else gives ``Any`` (the
error may depend on the sample's value) unless every argument of it was an exact sample (a
constant or an empty list), whose behaviour is the real one.  Callables whose result type
depends on values (``int ** int``, ``x[i]``, ``np.reshape``, ``np.zeros(n)``) have rules of
their own.
"""

from __future__ import annotations

import builtins
import itertools
import typing as t
import warnings

import numpy as np

from gibbous.ir import types as T
from gibbous.infer.typerules.base import (
    NUMERIC_KINDS,
    ExactInt,
    TypeRule,
    _is_inert_class,
    is_data_value,
    join,
    type_of_value,
)


class Sample(t.NamedTuple):
    """A representative runtime value.  ``exact``: it behaves as every value it stands for."""

    value: object
    exact: bool


_MAX_COMBINATIONS = 512
# Constant integers up to this size are used as themselves; larger ones are replaced by their
# class's samples, so that sampling np.ones(10**9) or "a" * 10**9 allocates nothing large.
_MAX_SAMPLED_INT = 8


def samples(ty: T.Type) -> list[Sample] | None:
    """One representative value per class (and dtype, and rank) that ``ty`` admits.

    ``None`` when ``ty`` admits values that cannot be sampled: user objects, ``Any``, arrays of
    unknown dtype or rank.  Arrays are ``(1,)*ndim`` arrays of ones, created afresh.
    """
    match ty:
        case T.Const(value=value):
            return _const_samples(value)
        case T.Bool():
            return [Sample(True, False), Sample(np.True_, False)]
        case ExactInt(dtype=d) | T.Int(dtype=d):
            found = [Sample(np.dtype(d).type(3), False)]
            if d == "int64":
                found.append(Sample(3, False))
            if isinstance(ty, T.Int) and d == "int64":  # Bool <= Int("int64") only
                found += [Sample(True, False), Sample(np.True_, False)]
            return found
        case T.Float(dtype=d):
            found = [Sample(np.dtype(d).type(1.5), False)]
            return found + [Sample(1.5, False)] if d == "float64" else found
        case T.Complex(dtype=d):
            found = [Sample(np.dtype(d).type(1.5 + 0.5j), False)]
            return found + [Sample(1.5 + 0.5j, False)] if d == "complex128" else found
        case T.Str():
            return [Sample("ab", False)]
        case T.NoneType():
            return [Sample(None, True)]
        case T.Array(dtype=dtype, ndim=ndim) if dtype is not None and ndim is not None:
            if np.dtype(dtype).kind not in NUMERIC_KINDS:
                return None
            return [Sample(np.ones((1,) * ndim, dtype=dtype), False)]
        case T.Tuple(items=items, cls=cls) if cls is tuple:
            return _product_samples([samples(i) for i in items], tuple)
        case T.List(item=item):
            # A list type never promises a length: the empty list is always a possible value.
            empty = Sample([], True)
            if isinstance(item, T.Bottom):
                return [empty]
            inner = samples(item)
            if inner is None:
                return None
            return [empty] + [Sample([s.value], s.exact) for s in inner]
    return None


def _const_samples(value: object) -> list[Sample] | None:
    # A large integer is sampled by a small one of the same sign: a negative exponent or
    # count may decide a result type (matrix_power of a bool matrix to -10 is float).
    if type(value) is builtins.int and abs(value) > _MAX_SAMPLED_INT:
        return [Sample(3 if value > 0 else -3, False)]
    if isinstance(value, np.integer) and abs(int(value)) > _MAX_SAMPLED_INT:
        return [Sample(type(value)(3 if value > 0 else -3), False)]
    if type(value) is tuple:
        return _product_samples([_const_samples(v) for v in value], tuple)
    if is_data_value(value) or _is_inert_class(value):
        return [Sample(value, True)]
    return None


def _product_samples(
    parts: list[list[Sample] | None], make: t.Callable[[t.Iterable[object]], object]
) -> list[Sample] | None:
    if any(p is None for p in parts):
        return None
    size = 1
    for p in parts:
        size *= len(t.cast(list[Sample], p))
    if size > _MAX_COMBINATIONS:
        return None
    return [
        Sample(make(s.value for s in combo), all(s.exact for s in combo))
        for combo in itertools.product(*t.cast(list[list[Sample]], parts))
    ]


def _fresh(value: object) -> object:
    # Samples are shared between combinations; a callable that writes into its argument
    # (ndarray.fill, list.sort) must not change what the next combination sees.
    if isinstance(value, np.ndarray):
        return value.copy()
    if type(value) is list:
        return [_fresh(v) for v in value]
    return value


_evaluations: dict[tuple[object, ...], T.Type | None] = {}


def evaluate_on_samples(
    fn: t.Callable[..., object], args: t.Sequence[T.Type], kwargs: t.Mapping[str, T.Type]
) -> T.Type | None:
    """The join of ``fn``'s result types over all sample combinations of its arguments.

    ``None`` when some argument cannot be sampled; ``Any`` when a combination raises something
    other than ``TypeError`` for a value that only represents others, or when every combination
    raises.  Only for callables whose result type depends on argument classes, dtypes, ranks
    and constants, not on other values or on shapes (see the module docstring).
    """
    try:
        key: tuple[object, ...] = (fn, tuple(args), tuple(sorted(kwargs.items())))
        hash(key)
    except TypeError:
        return _evaluate(fn, args, kwargs)
    if key not in _evaluations:
        _evaluations[key] = _evaluate(fn, args, kwargs)
    return _evaluations[key]


def _evaluate(
    fn: t.Callable[..., object], args: t.Sequence[T.Type], kwargs: t.Mapping[str, T.Type]
) -> T.Type | None:
    arg_samples = [samples(a) for a in args]
    kw_samples = {k: samples(v) for k, v in kwargs.items()}
    if any(s is None for s in arg_samples) or any(s is None for s in kw_samples.values()):
        return None
    names = list(kw_samples)
    parts = [t.cast(list[Sample], s) for s in arg_samples] + [
        t.cast(list[Sample], kw_samples[k]) for k in names
    ]
    size = 1
    for p in parts:
        size *= len(p)
    if size > _MAX_COMBINATIONS:
        return None
    result: T.Type = T.BOTTOM
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for combo in itertools.product(*parts):
            values = [_fresh(s.value) for s in combo]
            pos, kw = values[: len(args)], dict(zip(names, values[len(args) :]))
            try:
                out = fn(*pos, **kw)
            except TypeError:
                continue
            except Exception:
                if all(s.exact for s in combo):
                    continue  # the real values raise too
                return T.ANY
            result = join(result, type_of_value(out))
    return T.ANY if isinstance(result, T.Bottom) else result


def sampled(fn: t.Callable[..., object]) -> TypeRule:
    """The rule that types calls of ``fn`` by abstract sampling (``Any`` when it cannot)."""

    def rule(args: tuple[T.Type, ...], kwargs: dict[str, T.Type]) -> T.Type:
        found = evaluate_on_samples(fn, args, kwargs)
        return T.ANY if found is None else found

    return rule
