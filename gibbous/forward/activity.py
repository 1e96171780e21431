"""Which values of a function forward mode gives tangents to.

A value is **varied** when it is a varied argument, the result of a call with a varied operand,
or a block argument some edge passes a varied value to (and its type can carry a tangent).  So
far this is plain dependence.  Writes into arrays add the rest: a call with a varied operand
that writes into an array (``z[i] = x``, ``np.add(a, b, out=z)``, ``z += x``, a Python
function that does one of these to its argument) makes that array **exposed**, and with it
every value it may alias: the operand it was sliced or reshaped from, the values passed to the
block argument it is.  An exposed array is varied from where it is made, whatever made it
(``z = np.zeros(3)`` gets a tangent of zeros), because every name of the memory must see one
tangent memory, written where the primal is written.

What cannot be given a tangent that way is reported, for the transform to refuse by name: an
exposed constant (a global or captured array), an exposed argument the caller gave no tangent,
an exposed value of another type (an array held in a list or an object).
"""

from __future__ import annotations

import dis
import inspect
import operator
import types
import typing as t
from collections import abc

import attrs
import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.core import (
    BlockArgument,
    Branch,
    Call,
    Constant,
    Function,
    Guard,
    Jump,
    Operation,
    Result,
    Value,
    edge_args,
)
from gibbous.ir.purity import returns_fresh
from gibbous.rules.call_adapters import Packed
from gibbous.reverse.derived import ir_parameters
from gibbous.rules.emit import user_class
from gibbous.rules.inplace_forward import IN_PLACE_OF

#: ``writes(call, varied)``: the indices, among the call's ``(*args, *kwarg values)``, of the
#: operands the call may write into, given which operands are varied.
Writes = t.Callable[[Call, tuple[bool, ...]], frozenset[int]]


#: calls that return new memory whatever their operands: copies and new arrays
_NEW_MEMORY = frozenset([
    np.copy, np.ndarray.copy, np.zeros_like, np.ones_like, np.empty_like, np.full_like,
    np.zeros, np.ones, np.empty, np.full,
])  # fmt: skip


def _copies(op: Call) -> bool:
    """Whether ``op`` returns new memory: a copy, a new array, ``np.array(x)`` (which copies
    unless told ``copy=False`` or ``copy=None``)."""
    if not isinstance(op.callee, Constant):
        return False
    fn = op.callee.value
    try:
        if fn in _NEW_MEMORY:
            return True
    except TypeError:  # (unhashable)
        return False
    if fn is not np.array or len(op.args) > 2:  # (np.array(x, dtype, *, copy=...))
        return False
    copy = op.kwargs.get("copy")
    return copy is None or isinstance(copy, Constant) and copy.value is True


def tangent_carrying(ty: T.Type) -> bool:
    """Whether values of ``ty`` get a tangent here: real and complex numbers and arrays
    (complex ones: complex tangents), and values whose type inference could not tell (``Any``:
    a recursive call's result, ``x[k]``), whose tangent functions check at run time what they
    are given."""
    if isinstance(ty, (T.Float, T.Complex, T.Any)):
        return True
    if isinstance(ty, T.Tuple):  # (a tuple of tangents and Nones)
        return any(map(tangent_carrying, ty.items))
    if isinstance(ty, T.List):  # (a list of them, grown and written as the list is)
        return tangent_carrying(ty.item)
    if isinstance(ty, T.Dict):  # (a dict of them, by key)
        return tangent_carrying(ty.value)
    if isinstance(ty, T.Object):  # (an iterator over an array or a tuple: one over the tangent;
        # an instance of a Python class: its attributes' tangents; a tuple or list of items
        # of types unknown: one of their tangents)
        return issubclass(ty.cls, _ITERABLE) or user_class(ty.cls) or ty.cls in (tuple, list)
    # (an array of a dtype the build could not tell, eig's: its tangent functions check at run
    # time that it is real)
    return isinstance(ty, T.Array) and (ty.dtype is None or np.dtype(ty.dtype).kind in "fc")


#: iterators, and a dict's views of its values: one over the tangent runs in step
_ITERABLE = (abc.Iterator, abc.ItemsView, abc.ValuesView)


def tangentless(ty: T.Type) -> bool:
    """Types whose values never carry a derivative (an int, a bool, None, a string)."""
    if isinstance(ty, T.Const):
        return not isinstance(ty.value, (float, complex, np.inexact))
    if isinstance(ty, T.Array):
        return ty.dtype is not None and np.dtype(ty.dtype).kind in "biu"
    if isinstance(ty, T.Tuple):  # ``x.shape``
        return all(map(tangentless, ty.items))
    if isinstance(ty, T.Object):  # (ranges and slices hold ints, whatever made them; an
        # exception made of a float is raised or read for its message, not differentiated;
        # ``type(x)`` is a class, ``x.dtype`` a dtype)
        return issubclass(ty.cls, (range, slice, str, bytes, BaseException, type, np.dtype))
    return isinstance(ty, (T.Int, T.Bool, T.NoneType, T.Str))


def operands(op: Call) -> tuple[Value, ...]:
    """A call's operands as forward rules number them: positional, then keyword values."""
    return (*op.args, *op.kwargs.values())


@attrs.frozen(eq=False)
class Varied:
    values: frozenset[Value]
    exposed: frozenset[Value]
    #: exposed values that cannot get a tangent: why, and the write that exposed them (what
    #: the transform refuses)
    unreachable: tuple[tuple[str, Operation], ...]
    #: edges passing a varied value to a block argument of a type without tangents
    untyped_edges: tuple[tuple[Operation, T.Type], ...]

    def written_args(self, f: Function) -> frozenset[int]:
        """The arguments of ``f`` a write may reach (by index)."""
        return frozenset(i for i, a in enumerate(f.args) if a in self.exposed)


def analyse(
    f: Function, varied_args: t.Sequence[bool], writes: Writes, seeds: t.Iterable[Value] = ()
) -> Varied:
    """What is varied and exposed in ``f``; ``seeds``: values varied whatever their operands
    (the cells of a closure whose boxes its caller passed)."""
    incoming: dict[BlockArgument, list[Value]] = {}
    for block in f.blocks:
        term = block.terminator
        for i, succ in enumerate(term.successors if term is not None else ()):
            for param, v in zip(succ.args, edge_args(term, i)):  # type: ignore[arg-type]
                incoming.setdefault(param, []).append(v)

    def alias_sources(v: Value) -> t.Sequence[Value]:
        """The values ``v`` may share memory with, one step back."""
        if isinstance(v, BlockArgument):
            return incoming.get(v, ())
        if isinstance(v, Result) and isinstance(v.op, Call) and _copies(v.op):
            return ()  # (new memory, whatever it was made of)
        if isinstance(v, Result) and isinstance(v.op, Call) and not returns_fresh(v.op):
            op = v.op
            if isinstance(op.callee, Constant) and op.callee.value in IN_PLACE_OF and op.args:
                return op.args[:1]  # (``z += x`` is ``z``)
            out = op.kwargs.get("out")
            return op.operands if out is None else (out,)
        return ()

    varied: set[Value] = {a for a, on in zip(f.args, varied_args) if on} | set(seeds)
    exposed: set[Value] = set()
    untyped: list[tuple[Operation, T.Type]] = []

    cause: dict[Value, Operation] = {}

    # Exposed by writes into their slots only (``lst.append``): what they were made of is not
    # written, so the walk stops at a container's constructor; a write into memory they hold
    # (``lst[0][i] = x``) walks on through it.
    shallow: set[Value] = set()

    def expose(v: Value, op: Operation, slots: bool = False) -> bool:
        todo, grew = [v], False
        while todo:
            x = todo.pop()
            if not _memory(x) or x in exposed and (slots or x not in shallow):
                continue
            if x not in exposed:
                exposed.add(x)
                cause[x] = op
            grew = True
            if slots:
                shallow.add(x)
                if _made_of_items(x):
                    continue
            else:
                shallow.discard(x)
            todo += alias_sources(x)
        return grew

    changed = True
    while changed:
        changed = False
        for block in f.blocks:
            for op in block.ops:
                if isinstance(op, Call):
                    closure = _closure(op)
                    if closure is not None:  # (a later call of it may write its cells)
                        changed |= expose(closure, op)
                    this = _method_self(op)
                    if this is not None:  # (a method may write its object)
                        changed |= expose(this, op)
                    flags = tuple(v in varied for v in operands(op))
                    if not any(flags) and op.callee not in varied:
                        continue
                    if op.result not in varied and tangent_carrying(op.type):
                        varied.add(op.result)
                        changed = True
                    vals = operands(op)
                    for i in writes(op, flags):
                        changed |= expose(vals[i], op, _slot_write(op, vals[i]))
                elif isinstance(op, (Jump, Branch, Guard)):
                    for i, succ in enumerate(op.successors):
                        for param, value in zip(succ.args, edge_args(op, i)):
                            if value in varied and param not in varied:
                                if not tangent_carrying(param.type):
                                    untyped.append((op, param.type))
                                    continue
                                varied.add(param)
                                changed = True
        for v in exposed:
            if v not in varied and tangent_carrying(v.type) and not isinstance(v, Constant):
                if not (isinstance(v, BlockArgument) and v.block is f.entry):
                    varied.add(v)
                    changed = True
    unreachable = []
    for v in exposed:
        if isinstance(v, Constant):
            if not _code(v.value):
                what = "an array the function reads from outside (a global or a captured value)"
                unreachable.append((what, cause[v]))
        elif isinstance(v, BlockArgument) and v.block is f.entry and v not in varied:
            what = (
                f"argument {v.name!r}, which has no tangent (the caller passed an array without "
                "one: a callee known only when it is called cannot give its arrays tangents "
                "where they are made)"
            )
            unreachable.append((what, cause[v]))
        elif not tangent_carrying(v.type):
            unreachable.append((f"an array held in a value of type {v.type}", cause[v]))
    return Varied(frozenset(varied), frozenset(exposed), tuple(unreachable), tuple(untyped))


def _slot_write(op: Call, target: Value) -> bool:
    """A write into the slots of a list or dict (``append``, ``d[k] = v``, ``f(**a)``'s merge),
    not into the memory of what it holds."""
    callee = op.callee
    if not isinstance(callee, Constant) or not isinstance(target.type, (T.List, T.Dict)):
        return False
    fn = callee.value
    return fn in _SLOT_WRITES or fn is operator.setitem and target is op.args[0]


_SLOT_WRITES = frozenset([
    list.append, list.extend, list.insert, list.pop, list.remove, list.clear, list.reverse,
    runtime.dict_merge, dict.update, dict.pop, dict.setdefault, dict.clear, operator.delitem,
])  # fmt: skip


def _made_of_items(v: Value) -> bool:
    """A container made here of its items (``[a, b]``, ``{k: v}``): its own object."""
    if not (isinstance(v, Result) and isinstance(v.op, Call)):
        return False
    callee = v.op.callee
    return isinstance(callee, Constant) and callee.value in _CONTAINER_MAKERS


_CONTAINER_MAKERS = frozenset([runtime.make_list, runtime.make_dict, list, dict])


def _closure(op: Call) -> Value | None:
    """The tuple of cells ``make_function`` makes a nested function over, if any: every cell
    in it gets a box from where it is made (``gibbous.library.python.closures``)."""
    callee = op.callee
    if not (isinstance(callee, Constant) and callee.value is runtime.make_function):
        return None
    if len(op.args) < 5 or isinstance(op.args[4], Constant):
        return None
    code = op.args[0]
    if isinstance(code, Constant) and isinstance(code.value, types.CodeType):
        if not writes_free_variables(code.value):
            return None  # (a function that only reads its cells, a comprehension's: no write)
    return op.args[4]


def writes_free_variables(code: types.CodeType, names: frozenset[str] | None = None) -> bool:
    """Whether a function of ``code`` may write into the cells it closes over (``names``:
    those of them to look for; all by default): a ``nonlocal`` store or delete in it, or in a
    function nested in it that closes over the same cells."""
    names = frozenset(code.co_freevars) if names is None else names
    if not names:
        return False
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in names:
            return True
    return any(
        writes_free_variables(c, names & frozenset(c.co_freevars))
        for c in code.co_consts
        if isinstance(c, types.CodeType)
    )


def _method_self(op: Call) -> Value | None:
    """The object a call of one of its methods (``obj.m(...)``) or of itself (``obj(...)``)
    may write into: an instance of a Python class (``gibbous.library.python.objects``)."""
    callee = op.callee
    if isinstance(callee, Result) and isinstance(callee.op, Call):
        getter = callee.op
        if isinstance(getter.callee, Constant) and getter.callee.value is getattr and getter.args:
            callee = getter.args[0]
    ty = callee.type
    return callee if isinstance(ty, T.Object) and user_class(ty.cls) else None


def _memory(v: Value) -> bool:
    """Whether ``v`` may be (or hold) memory a write reaches: not a number, string, None."""
    ty = v.type
    if isinstance(ty, T.Const):
        return isinstance(ty.value, np.ndarray)
    scalars = (T.Float, T.Complex, T.Int, T.Bool, T.NoneType, T.Str)
    return not isinstance(ty, scalars) and not tangentless(ty)


def _code(value: object) -> bool:
    """Constants a call's operands hold that are no memory a write reaches: the callee."""
    return callable(value) or isinstance(value, (types.ModuleType, type, types.CodeType))


@attrs.frozen
class Default:
    """A parameter a call leaves to its default value."""

    value: object


def bind_call(
    fn: types.FunctionType, n_args: int, kwnames: tuple[str, ...]
) -> list[int | Default] | None:
    """How a call of the Python function ``fn`` with ``n_args`` positional operands and these
    keywords fills ``fn``'s parameters, in order: each the index of an operand (positional,
    then keyword, as ``operands`` numbers them) or the parameter's default; None for what
    this cannot bind (``*args``, ``**kwargs``, keyword-only parameters, a missing value, an
    unknown keyword)."""
    code = fn.__code__
    if code.co_flags & 0x0C or code.co_kwonlyargcount:
        return None
    names = code.co_varnames[: code.co_argcount]
    if n_args > len(names):
        return None
    defaults = fn.__defaults__ or ()
    first_default = len(names) - len(defaults)
    out: list[int | Default] = []
    for i, name in enumerate(names):
        if i < n_args:
            if name in kwnames:
                return None
            out.append(i)
        elif name in kwnames:
            out.append(n_args + kwnames.index(name))
        elif i >= first_default:
            out.append(Default(defaults[i - first_default]))
        else:
            return None
    if any(k not in names[n_args:] for k in kwnames):
        return None
    return out


def bind_packed(
    fn: types.FunctionType, n_args: int, kwnames: tuple[str, ...]
) -> list[int | Default | Packed] | None:
    """``bind_call``, and ``*args``, ``**kwargs`` and keyword-only parameters too: a
    ``Packed`` of the operands a ``*args`` (a tuple) or ``**kwargs`` (a dict) is made of, in
    the order of the parameters of ``fn``'s IR; None for a call that does not bind (Python
    would raise ``TypeError``)."""
    signature = runtime.code_signature(fn)
    try:
        given = signature.bind(*range(n_args), **{k: n_args + i for i, k in enumerate(kwnames)})
    except TypeError:
        return None
    passed = dict(given.arguments)
    given.apply_defaults()
    out: list[int | Default | Packed] = []
    for name in ir_parameters(fn):
        name = name if name[:1] != "." else f"implicit{name[1:]}"  # (a genexpr's ``.0``)
        kind = signature.parameters[name].kind
        value = given.arguments[name]
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out.append(Packed(tuple(value)))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.append(Packed(tuple(value.values()), tuple(value)))
        elif name in passed:
            out.append(t.cast(int, value))
        else:
            out.append(Default(runtime.given_default(value)))
    return out


def bound(
    binding: t.Sequence[int | Default | Packed],
    types: tuple[T.Type, ...],
    varied: tuple[bool, ...],
) -> tuple[tuple[T.Type, ...], tuple[bool, ...]]:
    """The types and varied flags of a bound call's parameters (``bind_call``, ``bind_packed``:
    a ``*args`` is a tuple of its operands, a ``**kwargs`` a dict of them, with a tangent where
    its items can have one)."""

    def type_of(b: int | Default | Packed) -> T.Type:
        if isinstance(b, Default):  # (passed as the constant it is: ``Calls.bound_value``)
            return T.typeof(b.value, const=T.is_immutable_value(b.value))
        if isinstance(b, int):
            return types[b]
        items = tuple(T.widen(types[i]) for i in b.indices)  # (an item's type, not a value)
        if b.names is None:
            return T.Tuple(items)
        return T.Dict(T.STR, T.join_all(items)) if items else T.typeof({})

    def varied_of(b: int | Default | Packed) -> bool:
        if isinstance(b, Default):
            return False
        if isinstance(b, int):
            return varied[b]
        # (a tuple or dict made for the call: none of its items' aliases can miss a tangent
        # given to it, of zeros if none has one, which a closure capturing it may need; item by
        # item: the join of ``None`` and ``False`` is ``any``, but neither carries a tangent)
        return any(varied[i] or tangent_carrying(T.widen(types[i])) for i in b.indices)

    return tuple(map(type_of, binding)), tuple(map(varied_of, binding))
