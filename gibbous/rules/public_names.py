"""The names messages give callables: where users import them from.

The IR's text form names an object by a path that imports it back (``gibbous.ir.names``); for
objects that have none, such as SciPy's ufuncs (``scipy.special.ndtr`` says its module is
``numpy``), the frontend registers one under ``gibbous.ir.runtime.registered``.  Those
paths are right for the parser and useless to a reader: ``callable_name`` prints
``scipy.special.ndtr`` instead, found by looking for the object among the public names of the
modules users import such functions from (``gibbous.ir.names.public_name``).  Methods are named through their class or instance
(``scipy.stats.rv_continuous.logpdf``, ``scipy.stats.multivariate_normal.logpdf``).
"""

from __future__ import annotations

import typing as t

from gibbous.ir.runtime import registered_path
from gibbous.ir.names import import_path, public_name

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


# --------------------------------------------------------------------------------------------
# gibbous's own entry points, which differentiated code may not call (yet)

_ENTRY = "__gibbous_entry__"
T_ = t.TypeVar("T_")


def entry_point(obj: T_) -> T_:
    """Marks a function or class of gibbous's public API that computes derivatives (``grad``,
    ``value_and_gradient``, ``hvp``...): a call of it inside differentiated code is refused
    by name (``entry_point_name``), not derived through gibbous's internals."""
    try:
        setattr(obj, _ENTRY, True)
        if not isinstance(getattr(obj, "__gibbous_name__", None), str):
            setattr(obj, "__gibbous_name__", f"gibbous.{getattr(obj, '__name__', '?')}")
    except (AttributeError, TypeError):
        pass
    return obj


def entry_point_name(fn: object) -> str | None:
    """The public name of ``fn`` if it is (an instance of) a marked entry point."""
    for holder in (fn, type(fn)):
        if getattr(holder, _ENTRY, False) is True:
            name = getattr(holder, "__gibbous_name__", None)
            return name if isinstance(name, str) else callable_name(fn)
    return None


def higher_order_hint() -> str:
    return (
        "derivatives of code that computes derivatives are not supported yet; for second "
        "derivatives call gibbous.hvp, gibbous.hessian or gibbous.jacobian on the function "
        "itself, outside the differentiated code"
    )
