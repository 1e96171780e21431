"""The names messages give callables: where users import them from.

The IR's text form names an object by a path that imports it back (``gibbous.ir.names``); for
objects that have none, such as SciPy's ufuncs (``scipy.special.ndtr`` says its module is
``numpy``), the frontend registers one under ``gibbous.frontend.runtime.registered``.  Those
paths are right for the parser and useless to a reader: ``callable_name`` prints
``scipy.special.ndtr`` instead, found by looking for the object among the public names of the
modules users import such functions from (``_PUBLIC_MODULES``, only those already imported:
naming something never imports a module).  Methods are named through their class or instance
(``scipy.stats.rv_continuous.logpdf``, ``scipy.stats.multivariate_normal.logpdf``).
"""

from __future__ import annotations

import sys
import types as pytypes

from gibbous.frontend.runtime import registered_path
from gibbous.ir.names import import_path

_PUBLIC_MODULES = (
    "numpy", "numpy.linalg", "numpy.fft", "numpy.random",
    "scipy.special", "scipy.linalg", "scipy.stats", "scipy.optimize", "scipy.integrate",
    "scipy.interpolate", "scipy.signal", "scipy.fft", "scipy.ndimage", "scipy.sparse",
    "scipy.sparse.linalg", "scipy.spatial", "scipy.cluster",
)  # fmt: skip

# module name -> id(obj) -> (public name, obj); the object kept so that an id is not reused
_tables: dict[str, dict[int, tuple[str, object]]] = {}


def _table(modname: str) -> dict[int, tuple[str, object]]:
    module = sys.modules.get(modname)
    if module is None:
        return {}
    table = _tables.get(modname)
    if table is None:
        table = {}
        for name, obj in list(vars(module).items()):
            if name.startswith("_"):
                continue
            # An alias loses to the object's own name (scipy.special.digamma, not psi).
            known = table.get(id(obj))
            if known is None or getattr(obj, "__name__", None) == name:
                table[id(obj)] = (f"{modname}.{name}", obj)
        _tables[modname] = table
    return table


def public_name(obj: object) -> str | None:
    """A public name of ``obj`` in an imported module of ``_PUBLIC_MODULES``, or of the class
    or instance a method belongs to; None if there is none."""
    for modname in _PUBLIC_MODULES:
        hit = _table(modname).get(id(obj))
        if hit is not None and hit[1] is obj:
            return hit[0]
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return None
    receiver = getattr(obj, "__self__", None)
    bound = isinstance(obj, (pytypes.MethodType, pytypes.BuiltinMethodType))
    if bound and receiver is not None and not isinstance(receiver, (pytypes.ModuleType, type)):
        # A method of a public instance (scipy.stats.norm.cdf), else of its public class.
        owner = public_name(receiver) or public_name(type(receiver))
        return f"{owner}.{name}" if owner is not None else None
    objclass = getattr(obj, "__objclass__", None)  # a method of a builtin class
    if isinstance(objclass, type):
        owner = public_name(objclass)
        return f"{owner}.{name}" if owner is not None else None
    qualname, module = getattr(obj, "__qualname__", ""), getattr(obj, "__module__", None)
    head, _, last = qualname.rpartition(".")
    if head and "." not in head and "<" not in head and last == name and module in sys.modules:
        cls = getattr(sys.modules[module], head, None)
        owner = public_name(cls) if isinstance(cls, type) else None
        if owner is not None and vars(cls).get(name) is obj:
            return f"{owner}.{name}"
    return None


def callable_name(fn: object) -> str:
    """How messages name a callable: its import path where that is public, else a public name
    (``public_name``), else its import path, else its module and qualified name."""
    path = None if registered_path(fn) is not None else import_path(fn)
    if path is not None and not any(part.startswith("_") for part in path.split(".")):
        return path
    found = public_name(fn)
    if found is not None:
        return found
    if path is not None:
        return path
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if isinstance(qualname, str):
        return f"{module}.{qualname}" if isinstance(module, str) else qualname
    return repr(fn)
