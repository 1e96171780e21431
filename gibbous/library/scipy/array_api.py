"""SciPy's array-API dispatch: ``array_namespace(*arrays)`` (the module whose functions a SciPy
function calls: NumPy's, for NumPy arrays) and ``array_api_compat``'s predicates
(``is_numpy_namespace(xp)``, ``is_torch_array(x)``, ...), which open nearly every function of
``scipy.stats``, ``scipy.signal`` and ``scipy.integrate``.

They have no derivative: a module, a bool.  Registered as such, both modes run them as they
are instead of deriving them from their source, which reads ``getattr(x,
"__array_namespace__", None)`` (a bound method of the array, which forward mode has no rule
for) and loops over the arrays' classes: every SciPy call's forward program refused there,
and every reverse build derived the same dispatch again.
"""

from __future__ import annotations

import importlib
import types
import typing as t

import numpy as np

from gibbous.infer.implementations import register_twin
from gibbous.infer.typerules.table import register_type_rule
from gibbous.ir import types as T
from gibbous.ir.exceptions import UnsupportedArgumentError
from gibbous.rules.registry import zero_derivative


def vendored(name: str) -> types.ModuleType | None:
    """SciPy's copy of the module ``name`` (``scipy._lib`` before 1.18, ``scipy._external``
    from 1.18 on); None for a SciPy without it."""
    for where in ("scipy._external", "scipy._lib"):
        try:
            return importlib.import_module(f"{where}.{name}")
        except ImportError:
            continue
    return None


#: ``array_api_compat``'s helpers.
HELPERS = vendored("array_api_compat.common._helpers")

try:
    from scipy._lib import _array_api
except ImportError:  # pragma: no cover
    HELPERS = None

_DISPATCH: list[object] = []
if HELPERS is not None:  # (else the dispatch is derived from its source, if it can be)
    _helpers = HELPERS
    _DISPATCH = [_array_api.array_namespace, _helpers.array_namespace]
    _DISPATCH += [
        getattr(_helpers, name)
        for name in sorted(dir(_helpers))
        if name.startswith("is_") and callable(getattr(_helpers, name))
    ]
    if callable(getattr(_helpers, "size", None)):  # (an int: ``x.size``; SciPy 1.18 asks it)
        _DISPATCH.append(_helpers.size)

for _fn in _DISPATCH:
    zero_derivative(_fn, ...)


# --------------------------------------------------------------------------------------------
# ``array_api_extra``'s ``apply_where(cond, args, f1, f2)`` (some 120 calls in scipy.stats:
# ``f1`` where ``cond``, ``f2`` elsewhere, each on its elements alone), whose NumPy path writes
# through ``at(out, cond).set(v)``, an object of a library class forward mode cannot follow.
# Its helper ``_apply_where`` is a twin: NumPy's path, the same writes as item assignments.


def numpy_namespace(xp: types.ModuleType) -> None:
    """Refuse, at run time, an array namespace other than NumPy's (the twin is its path)."""
    if HELPERS is None or not HELPERS.is_numpy_namespace(xp):
        raise UnsupportedArgumentError(
            f"scipy's apply_where over arrays of {getattr(xp, '__name__', xp)!r}: gibbous "
            "differentiates NumPy arrays"
        )


def apply_where(
    cond: t.Any,
    f1: t.Callable[..., t.Any],
    f2: t.Callable[..., t.Any] | None,
    fill_value: t.Any,
    *args: t.Any,
    kwkeys: t.Sequence[str] = (),
    xp: types.ModuleType,
) -> t.Any:
    """``array_api_extra._lib._funcs._apply_where`` on NumPy arrays (``kwkeys``: the names of
    the last ``args``, passed to ``f1`` and ``f2`` by keyword; SciPy before 1.18 has none)."""
    numpy_namespace(xp)
    n = len(args) - len(kwkeys)
    named = dict(zip(kwkeys, args[n:]))
    given = args[:n]
    temp1 = f1(*[a[cond] for a in given], **{k: v[cond] for k, v in named.items()})
    if f2 is None:
        dtype = np.result_type(temp1, fill_value)
        if isinstance(fill_value, (int, float, complex)):
            out = np.full(cond.shape, fill_value, dtype=dtype)
        else:
            out = np.array(fill_value, dtype=dtype, copy=True)
    else:
        ncond = ~cond
        temp2 = f2(*[a[ncond] for a in given], **{k: v[ncond] for k, v in named.items()})
        out = np.empty(cond.shape, dtype=np.result_type(temp1, temp2))
        out[ncond] = temp2
    out[cond] = temp1
    return out


zero_derivative(numpy_namespace, ...)
register_type_rule(numpy_namespace)(lambda args, kwargs: T.NONE)
_XPX = vendored("array_api_extra._lib._funcs")
if _XPX is not None and callable(getattr(_XPX, "_apply_where", None)):
    register_twin(_XPX._apply_where, t.cast(types.FunctionType, apply_where))
