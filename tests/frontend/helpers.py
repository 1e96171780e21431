"""Comparing what a function and its IR did."""

from __future__ import annotations

import copy
import typing as t

import numpy as np

from gibbous.frontend import function_ir
from gibbous.ir import runtime
from tests.frontend.interp import run


def same(a: object, b: object) -> bool:
    """Equal values, with arrays compared by dtype, shape and contents (nan equal to nan)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        b = t.cast(t.Sequence[object], b)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        b = t.cast(dict[object, object], b)
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


Outcome = tuple[str, object]


def outcome(call: t.Callable[[], object]) -> Outcome:
    try:
        return "returned", call()
    except Exception as e:  # the comparison is the point
        return "raised", (type(e), str(e))


def run_both(
    fn: t.Callable[..., object],
    args: tuple[object, ...],
    kwargs: dict[str, object],
    runner: t.Callable[..., object] | None = None,
) -> tuple[Outcome, Outcome, tuple[object, ...], tuple[object, ...]]:
    """Run ``fn`` natively and its IR (with ``runner(ir, *args)``, the interpreter by
    default) on copies of the arguments; both outcomes and both argument copies after."""
    ir = function_ir(fn)
    native_args, native_kwargs = copy.deepcopy((args, kwargs))
    ir_args, ir_kwargs = copy.deepcopy((args, kwargs))
    native = outcome(lambda: fn(*native_args, **native_kwargs))
    bound = runtime.bind_arguments(fn, ir_args, ir_kwargs)
    ran = outcome(lambda: (runner or run)(ir, *bound))
    return native, ran, (native_args, native_kwargs), (ir_args, ir_kwargs)
