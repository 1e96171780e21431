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

from gibbous.rules.registry import zero_derivative

#: ``array_api_compat``'s helpers where this SciPy keeps them (``scipy._lib`` before 1.18,
#: ``scipy._external`` from 1.18 on); None for a SciPy without them.
HELPERS: types.ModuleType | None = None
for _where in ("scipy._external", "scipy._lib"):
    try:
        HELPERS = importlib.import_module(f"{_where}.array_api_compat.common._helpers")
        break
    except ImportError:
        continue

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
