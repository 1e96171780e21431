"""The Python function a library callable runs, or is differentiated as.

NumPy's public functions are mostly ``_ArrayFunctionDispatcher`` objects: C shells that look
for ``__array_function__`` on their arguments and, finding none of an ndarray's subclasses or
duck types, call ``_implementation``, an ordinary Python function.  A call of the dispatcher
with ndarray, float, int, list or tuple arguments is that function's call, which type
inference reads and the AD passes differentiate when no rule is registered for the
dispatcher itself.  (Arguments of other types may override the call: a Dask array's
``__array_function__``.  Their types are not precise ones, and their calls are not rewritten.)

A *twin* is the same for a callable whose own code gibbous cannot read (C, a ``try``
statement) but whose meaning is a few lines of plain Python written for gibbous: the ufunc
methods (``np.add.reduce`` is a fold of ``np.add``), ``attrs.evolve``.  The library registers
them (``register_twin``), beside the rules of their area.
"""

from __future__ import annotations

import os
import types as pytypes
import typing as t

import numpy as np

from gibbous.ir.names import CallableTable

__all__ = [
    "implementation", "library_file", "library_of", "register_twin", "is_twin", "twin_helper",
    "tangent_to_derive", "tangent_of", "frozen_closure", "twin_module", "forward_twin",
]  # fmt: skip

#: (NumPy 2; NumPy 1.25's dispatchers are Python functions, read as they are.)
_DISPATCHER: type | None = getattr(np.concatenate, "__class__", None)
if _DISPATCHER is not None and _DISPATCHER.__name__ != "_ArrayFunctionDispatcher":
    _DISPATCHER = None


_TWINS: CallableTable[object, pytypes.FunctionType] = CallableTable()
_MARK = "__gibbous_twin__"


def register_twin(
    fn: object,
    python: pytypes.FunctionType,
    *,
    forward: t.Callable[[tuple[t.Any, ...], tuple[str, ...]], bool] | None = None,
) -> None:
    """Differentiate calls of ``fn`` (which has no rule) as calls of ``python``, which takes
    the same arguments and computes the same values.  With ``forward``, ``fn`` has a reverse
    rule and the twin is forward mode's, for the calls ``forward(types, kwnames)`` accepts
    (``builtins.map`` over finite containers); of several, the first that accepts."""
    if forward is None:
        _TWINS[fn] = twin_helper(python)
    else:  # (not ``implementation``'s: reverse mode and type inference keep the rule)
        found = _FORWARD_ONLY.get(fn)
        twins = [] if found is None else found
        twins.append((twin_helper(python), forward))
        _FORWARD_ONLY[fn] = twins


#: Twins for forward mode alone, by callable, with which calls (operand types, keywords)
#: each takes.
_FORWARD_ONLY: CallableTable[
    object,
    list[tuple[pytypes.FunctionType, t.Callable[[tuple[t.Any, ...], tuple[str, ...]], bool]]],
] = CallableTable()


def forward_twin(
    fn: object, types: tuple[t.Any, ...], kwnames: tuple[str, ...]
) -> pytypes.FunctionType | None:
    """The twin forward mode runs for a call of ``fn``, which has a reverse rule, with
    operands of ``types`` (the last ones by keyword, ``kwnames``), or None."""
    for twin, takes in _FORWARD_ONLY.get(fn) or ():
        if takes(types, kwnames):
            return twin
    return None


#: Callable objects whose call runs a Python function known once they are built, by class
#: (``register_shell``).
_SHELLS: dict[type, t.Callable[[t.Any], pytypes.FunctionType | None]] = {}


def register_shell(cls: type, unwrap: t.Callable[[t.Any], pytypes.FunctionType | None]) -> None:
    """Differentiate a call of an instance ``s`` of ``cls`` as a call of ``unwrap(s)`` (a
    forward program's stand-in for one still being built, reached by recursion: hvp
    differentiates forward programs)."""
    _SHELLS[cls] = unwrap


_F = t.TypeVar("_F")


def twin_helper(python: _F) -> _F:
    """Mark ``python``, a function of gibbous's own that a twin or a tangent function calls
    (``tangent_to_derive``), as code to derive (the rest of gibbous's own code is machinery,
    never differentiated), with the functions its body makes (a comprehension, a generator
    expression, a lambda: their code objects)."""
    setattr(python, _MARK, True)
    code = getattr(python, "__code__", None)
    todo = [code] if isinstance(code, pytypes.CodeType) else []
    while todo:
        c = todo.pop()
        _TWIN_CODE.add(c)
        todo += [k for k in c.co_consts if isinstance(k, pytypes.CodeType)]
    return python


_TWIN_CODE: set[pytypes.CodeType] = set()
_TWIN_MODULES: set[str] = set()


def twin_module(name: str) -> None:
    """Mark the functions of the module ``name`` (closures included) as code to derive, as
    ``twin_helper`` marks one: a module of forward rules, whose tangent functions call its
    helpers (``gibbous.rules.frules.register`` marks the module registering)."""
    _TWIN_MODULES.add(name)


_TANGENT_OF = "__gibbous_tangent_of__"


def tangent_to_derive(tangent: object, of: object) -> pytypes.FunctionType | None:
    """A copy of ``tangent``, a tangent function of a forward rule of ``of`` (a closure its
    maker returned), marked as code to derive (``twin_helper``) on behalf of ``of``: a
    Hessian-vector product's reverse pass differentiates it as it does the user's code, and
    reports what it cannot differentiate inside as ``of``'s (``tangent_of``).  None if
    ``tangent`` is no Python function.  (A copy per call site: one tangent function may serve
    several callables.)"""
    if not isinstance(tangent, pytypes.FunctionType):
        return None
    copy = pytypes.FunctionType(
        tangent.__code__, tangent.__globals__, tangent.__name__, tangent.__defaults__,
        tangent.__closure__,
    )  # fmt: skip
    copy.__kwdefaults__ = tangent.__kwdefaults__
    copy.__qualname__, copy.__module__ = tangent.__qualname__, tangent.__module__
    setattr(copy, _TANGENT_OF, of)
    return twin_helper(copy)


def tangent_of(fn: object) -> object | None:
    """The callable whose tangent function ``fn`` is (``tangent_to_derive``), or None."""
    return getattr(fn, _TANGENT_OF, None) if isinstance(fn, pytypes.FunctionType) else None


def frozen_closure(fn: object) -> bool:
    """Whether ``fn``'s closure cells are read once, when its IR is built, as constants (as
    globals are): a tangent function's (``tangent_to_derive``), whose maker filled its cells
    and returned.  Its derived programs are its own, not shared by its code
    (``reverse.dynamic_calls.function_key``)."""
    return tangent_of(fn) is not None


def is_twin(fn: object) -> bool:
    """Whether ``fn`` is a twin, a twin's helper or a function one of them makes: written for
    gibbous, derived wherever it is."""
    return (
        getattr(fn, _MARK, False) is True
        or getattr(fn, "__code__", None) in _TWIN_CODE
        or isinstance(fn, pytypes.FunctionType) and fn.__module__ in _TWIN_MODULES
    )


def implementation(fn: object) -> pytypes.FunctionType | None:
    """The Python function a call of ``fn`` runs, if ``fn`` is a shell around one (NumPy's
    array-function dispatchers), or is differentiated as (its twin); ``None`` for anything
    else, Python functions included."""
    unwrap = _SHELLS.get(type(fn))
    if unwrap is not None:
        return unwrap(fn)
    found_twin = _TWINS.get(fn)
    if found_twin is not None:
        return found_twin
    if _DISPATCHER is None or type(fn) is not _DISPATCHER:
        return None
    found = getattr(fn, "_implementation", None)  # (a builtin for those written in C)
    return found if isinstance(found, pytypes.FunctionType) else None


_LIBRARIES = {"numpy": "NumPy", "scipy": "SciPy"}


def library_of(fn: object) -> str | None:
    """The library whose own Python ``fn`` is ("NumPy", "SciPy"), where gibbous derives rules
    from that Python: a failure inside it is reported at the user's call of the library."""
    code = implementation(fn) or fn
    module = getattr(code, "__module__", None) if isinstance(code, pytypes.FunctionType) else None
    return None if module is None else _LIBRARIES.get(module.partition(".")[0])


def library_file(file: str) -> bool:
    """Whether ``file`` is a library's source (``library_of``), not the user's."""
    return any(f"{os.sep}{top}{os.sep}" in file for top in _LIBRARIES)
