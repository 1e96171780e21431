"""Binders written as IR: the programs a Hessian-vector product calls where a call's operands
are not its callee's parameters one for one.

A forward program takes its function's parameters in order, then the tangents of the varied
ones.  A call binding defaults, ``*args`` or ``**kwargs`` (``_quadratic(x, A, b, scale=2.0)``)
or unpacking a tuple (``f(y, t, *args)``) needs its operands moved into place first.  In
``jvp`` a Python closure does it (``dynamic.bound_run``); a Hessian-vector product's program is
differentiated again by reverse mode, which can read only IR, so there the same moves are a
small IR function, compiled, that calls the program: reverse mode derives its rule from its IR
as from any program found at run time.
"""

from __future__ import annotations

import operator
import typing as t

from gibbous.backends.numpy.codegen import compile_function
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Function, Value
from gibbous.forward.activity import Default
from gibbous.rules.call_adapters import Packed
from gibbous.rules.emit import filled, item_tangent

Binding = t.Sequence["int | Default | Packed"]


def binder(
    made: t.Callable[..., t.Any],
    name: str,
    binding: Binding | None,
    types: tuple[T.Type, ...],
    varied: tuple[bool, ...],
    full_varied: tuple[bool, ...],
    closure: T.Type | None = None,
    star: tuple[T.Type, T.Type, T.Type | None, T.Type | None, tuple[str, ...]] | None = None,
    unwrap: bool = False,
) -> t.Callable[..., t.Any]:
    """``run(...)``: the operands of a call (``types``; the last ones by keyword, as the
    binding numbers them) bound to the parameters of the program ``made`` (``binding``: None,
    one for one), and the varied operands' tangents to the varied parameters'.

    ``run``'s own parameters: with ``closure`` (the callee's type) the callee and its cells'
    tangents first, as ``made`` takes them; then the operands and their tangents (of the
    ``varied`` ones), or with ``star`` (the types of ``args``, of its tangents' tuple, of
    ``kwargs`` and of its tangents' dict, None without, and its keys) the values
    ``f(*args, **kwargs)`` is called with and their tangents, unpacked here.  With ``unwrap``
    the callee is a generator expression's ``GenexprFunction``, whose ``fn`` ``made`` takes."""
    params: list[tuple[str, T.Type]] = []
    if closure is not None:
        params += [("callee", closure), ("boxes", T.ANY)]
    params += _operand_params(types, varied, star)
    ir = Function(f"bind_{name}", params)
    b = Builder(ir)
    head: list[Value] = list(ir.args[:2]) if closure is not None else []
    if unwrap:  # (a generator expression run eagerly: its program takes the function it runs)
        head[0] = b.call(getattr, head[0], Constant("fn"), type=T.ANY)
    given = ir.args[len(head) :]
    operands: list[Value]
    tangents: list[Value | None]
    if star is None:
        operands = list(given[: len(types)])
        rest = iter(given[len(types) :])
        tangents = [next(rest) if v else None for v in varied]
    else:
        operands, tangents = _unpacked(b, given, types, varied, star[4])
    values: list[Value] = []
    dvalues: list[Value] = []
    for i, w in enumerate(range(len(types)) if binding is None else binding):
        if isinstance(w, Default):
            values.append(Constant(w.value))
        elif isinstance(w, int):
            values.append(operands[w])
            if full_varied[i]:
                dvalues.append(item_tangent(b, operands[w], tangents[w]))
        else:
            items = [operands[k] for k in w.indices]
            ds: list[Value] = [item_tangent(b, operands[k], tangents[k]) for k in w.indices]
            values.append(_packed(b, w, items))
            if full_varied[i]:
                dvalues.append(_packed(b, w, ds))
    _return_filled(b, b.call(made, *head, *values, *dvalues, type=T.ANY))
    return compile_function(ir)


Star = tuple[T.Type, T.Type, "T.Type | None", "T.Type | None", tuple[str, ...]]


def _operand_params(
    types: tuple[T.Type, ...], varied: tuple[bool, ...], star: Star | None
) -> list[tuple[str, T.Type]]:
    """A binder's parameters after its head: the operands and the varied ones' tangents, or
    with ``star`` the tuples (and dicts) of ``f(*args, **kwargs)``."""
    if star is None:
        params = [(f"a{i}", ty) for i, ty in enumerate(types)]
        return params + [(f"d{i}", ty) for i, (ty, v) in enumerate(zip(types, varied)) if v]
    params = [("args", star[0]), ("dargs", star[1])]
    if star[2] is not None:
        params += [("kwargs", star[2]), ("dkwargs", star[3] or T.NONE)]
    return params


def _return_filled(b: Builder, made_pair: Value) -> None:
    """Returns the program's ``(y, dy)``, ``dy`` zeros where it is None (a result without a
    tangent: its caller unpacks zeros)."""
    y = b.call(operator.getitem, made_pair, Constant(0), type=T.ANY)
    dy = b.call(operator.getitem, made_pair, Constant(1), type=T.ANY)
    dy = b.call(filled, y, dy, type=T.ANY)
    b.ret(b.call(runtime.make_tuple, y, dy, type=T.Tuple((T.ANY, T.ANY))))


def _unpacked(
    b: Builder,
    given: t.Sequence[Value],
    types: tuple[T.Type, ...],
    varied: tuple[bool, ...],
    names: tuple[str, ...],
) -> tuple[list[Value], list[Value | None]]:
    """The items of ``args`` (then the values of ``kwargs``, in its order) and the tangents of
    the varied ones, read out of the tuples (and dict) the call is given."""
    args, dargs = given[0], given[1]
    n = len(types) - len(names)
    operands: list[Value] = [
        b.call(operator.getitem, args, Constant(i), type=ty) for i, ty in enumerate(types[:n])
    ]
    tangents: list[Value | None] = [
        b.call(operator.getitem, dargs, Constant(i), type=T.ANY) if v else None
        for i, v in enumerate(varied[:n])
    ]
    if len(given) > 2:
        kwargs, dkwargs = given[2], given[3]
        for k, ty, v in zip(names, types[n:], varied[n:]):
            operands.append(b.call(operator.getitem, kwargs, Constant(k), type=ty))
            d = b.call(operator.getitem, dkwargs, Constant(k), type=T.ANY) if v else None
            tangents.append(d)
    return operands, tangents


def _packed(b: Builder, w: Packed, items: t.Sequence[Value]) -> Value:
    if w.names is None:
        return b.call(runtime.make_tuple, *items, type=T.Tuple(tuple(v.type for v in items)))
    pairs = [x for k, v in zip(w.names, items) for x in (Constant(k), v)]
    return b.call(runtime.make_dict, *pairs, type=T.ANY)


def method_binder(
    made: t.Callable[..., t.Any],
    name: str,
    types: tuple[T.Type, ...],
    varied: tuple[bool, ...],
    star: tuple[T.Type, T.Type, T.Type | None, T.Type | None, tuple[str, ...]] | None = None,
    receiver_varied: bool = True,
) -> t.Callable[..., t.Any]:
    """``run(callee, dself, *operands, *tangents of the varied)`` (with ``star``, as ``binder``
    takes it, the tuples and dicts of ``f(*args, **kwargs)``): a bound method of an array
    (``result.reshape(1)`` of a value the build could not tell), whose tangent is its
    receiver's, called as its type's method with the receiver first: ``made`` is that method's
    program, the receiver varied (unless ``receiver_varied`` is false: a mask's method,
    ``cond.any()``, whose tangent is none, whatever the build gave it).  The receiver is read
    off the bound method in the IR, so that reverse mode sends its cotangent there (a bound
    method's tangent is its receiver's)."""
    params: list[tuple[str, T.Type]] = [("callee", T.ANY), ("dself", T.ANY)]
    params += _operand_params(types, varied, star)
    ir = Function(f"bind_{name}", params)
    b = Builder(ir)
    callee, dself = ir.args[0], ir.args[1]
    receiver = b.call(getattr, callee, Constant("__self__"), type=T.ANY)
    operands: list[Value]
    tangents: list[Value | None]
    if star is None:
        operands = list(ir.args[2 : 2 + len(types)])
        rest = iter(ir.args[2 + len(types) :])
        tangents = [next(rest) if v else None for v in varied]
    else:
        operands, tangents = _unpacked(b, ir.args[2:], types, varied, star[4])
    dvalues = [item_tangent(b, a, d) for a, d in zip(operands, tangents) if d is not None]
    dfirst = [dself] if receiver_varied else []
    _return_filled(b, b.call(made, receiver, *operands, *dfirst, *dvalues, type=T.ANY))
    return compile_function(ir)


def headless_binder(
    made: t.Callable[..., t.Any],
    name: str,
    types: tuple[T.Type, ...],
    varied: tuple[bool, ...],
    star: Star | None = None,
) -> t.Callable[..., t.Any]:
    """``run(callee, dcallee, *operands, *tangents of the varied)`` (with ``star``, as
    ``binder`` takes it) calling ``made`` without its head: for a callee the build saw with a
    tangent (``xp.broadcast_arrays``, ``xp`` of a type it could not tell) that has none at run
    time, so its program takes no cells' tangents, while the caller's IR passes them."""
    params: list[tuple[str, T.Type]] = [("callee", T.ANY), ("dcallee", T.ANY)]
    ir = Function(f"bind_{name}", params + _operand_params(types, varied, star))
    b = Builder(ir)
    _return_filled(b, b.call(made, *ir.args[2:], type=T.ANY))
    return compile_function(ir)

