"""Rules for what calling Python classes needs beyond their own ``__new__`` and ``__init__``
(which are derived: ``gibbous.reverse.construction.ConstructRule``).

* ``object.__new__(cls)``: a fresh object with a fresh tangent;
* ``tuple.__new__(cls, items)``: how a NamedTuple's ``__new__`` and ``_make`` make the
  instance.  A NamedTuple's tangent is that of the plain tuple of its items, so the result
  takes the items' fdata and the pullback hands the result's rdata to the tuple;
* ``NamedTuple._replace``, by its code object (``by_code``): the same for each NamedTuple;
* a twin (``gibbous.infer.implementations``): ``attrs.evolve`` is differentiated as a plain-Python equivalent, its own
  source having a ``try`` statement.
"""

from __future__ import annotations

import collections
import types
import typing as t

import attrs

from gibbous.infer.implementations import register_twin
from gibbous.library.common import ANY, CD, NT, RuleResult
from gibbous.rules.registry import primitive, zero_derivative
from gibbous.tangents.model import CoDual, zero_fdata, zero_rdata


# ``object.__init__(obj)``: what ``super().__init__()`` reaches at the top of a hierarchy (a
# check of its arguments, nothing written).
zero_derivative(object.__init__, ANY)


@primitive(tuple.__new__, ANY, ANY)
def tuple_new_rrule(f: CD, cls: CD, items: CD) -> RuleResult:
    if not isinstance(items.primal, tuple):
        raise TypeError(
            f"the rule of tuple.__new__(cls, items) takes the items as a tuple, not a "
            f"{type(items.primal).__name__}: convert them with tuple(...) first"
        )
    y = tuple.__new__(cls.primal, items.primal)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        return NT, NT, zero_rdata(items.primal) if dy is NT else dy

    return CoDual(y, items.fdata), pullback


@primitive(object.__new__, ANY)
def object_new_rrule(f: CD, cls: CD) -> RuleResult:
    """``object.__new__(cls)`` in a ``__new__`` written in Python: a fresh, empty object."""
    y = object.__new__(cls.primal)
    return CoDual(y, zero_fdata(y)), lambda dy: (NT, NT)


# --------------------------------------------------------------------------------------------
# Functions that factories make afresh for every class share one code object: their rules are
# found by it (``by_code``).  A NamedTuple's ``_replace`` is one: its source takes the fields
# apart with ``map(kwds.pop, ...)``, which is better handled whole than derived.


def namedtuple_replace_rrule(f: CD, this: CD, **changes: CD) -> RuleResult:
    y = f.primal(this.primal, **{k: v.primal for k, v in changes.items()})
    fields = type(this.primal)._fields
    index = {name: fields.index(name) for name in changes}
    own = this.fdata if this.fdata is not NT else (NT,) * len(fields)
    parts = list(own)
    for name, v in changes.items():
        parts[index[name]] = v.fdata
    fdata = NT if all(p is NT for p in parts) else tuple(parts)

    def pullback(dy: t.Any) -> tuple[t.Any, ...]:
        if dy is NT:
            return (NT, NT, *(zero_rdata(v.primal) for v in changes.values()))
        kept = list(dy)
        for name, i in index.items():
            kept[i] = zero_rdata(this.primal[i])
        given = tuple(dy[index[name]] for name in changes)
        return (NT, tuple(kept), *given)

    return CoDual(y, fdata), pullback


def _namedtuple_code(name: str) -> types.CodeType:
    made = collections.namedtuple("made", "a")
    return t.cast(types.CodeType, getattr(made, name).__code__)


_BY_CODE: dict[types.CodeType, t.Callable[..., RuleResult]] = {
    _namedtuple_code("_replace"): namedtuple_replace_rrule,
}


def by_code(fn: object) -> t.Callable[..., RuleResult] | None:
    """The rule of a function made by a factory (``NamedTuple._replace``), found by its code."""
    code = getattr(fn, "__code__", None) if isinstance(fn, types.FunctionType) else None
    return None if code is None else _BY_CODE.get(code)


# --------------------------------------------------------------------------------------------
# Twins: library functions whose source gibbous cannot read (a ``try`` statement, C code) but
# which are a few lines of plain Python; a call of one is differentiated as its twin here.


def attrs_evolve(inst: t.Any, **changes: t.Any) -> t.Any:
    """``attrs.evolve(inst, **changes)``: a new instance with ``changes`` applied."""
    cls = inst.__class__
    for a in attrs.fields(cls):
        if a.init and a.alias not in changes:
            changes[a.alias] = getattr(inst, a.name)
    return cls(**changes)


register_twin(attrs.evolve, t.cast(types.FunctionType, attrs_evolve))
try:  # the old namespace, where attrs is installed with it
    import attr

    register_twin(attr.evolve, t.cast(types.FunctionType, attrs_evolve))
except ImportError:  # pragma: no cover
    pass
