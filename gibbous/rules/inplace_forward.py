"""Forward rules of calls that write into arrays: the tangent is written where the primal is.

Forward mode keeps one tangent memory beside each array that a write may reach
(``gibbous.forward.activity``: the array is *exposed*), aliased as the primal is: ``v =
z[1:]`` has the tangent ``dz[1:]``, a view too.  A call that writes into ``z`` then writes its
tangent into ``dz``, and every view of ``dz`` sees it, as every view of ``z`` sees the primal
write.  The forms:

* ``z[i] = x``: ``dz[i] = dx`` (0 where ``x`` has no tangent); ``np.copyto(z, x)`` and
  ``z.fill(x)`` likewise;
* ``z += x``, ``z -= x``: ``dz += dx``, ``dz -= dx``, linear;
* the other in-place operators, and ``out=`` of a function with a forward rule, reduce to the
  function without the write (``plain``): its result ``t`` and tangent ``dt`` are computed from
  the operands *before* the write (an operand may be ``z`` itself: ``z *= z``), then the
  primal writes and ``np.copyto(dz, dt)`` follows;
* ``np.matmul(A, B, out=C)`` (and ``np.dot``) is **stateful**: ``dC = dA @ B + A @ dB`` is
  written into ``dC`` with the second product in a buffer the call site keeps, so a warm call
  allocates nothing (``MatmulOut``);
* a function of your own registered with ``frule(fn, writes=...)`` (``gibbous.frule``).

Anything else that writes into an array with a tangent is refused by the transform.
"""

from __future__ import annotations

import operator
import threading
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.rules.emit import (
    ForwardModeError,
    ObjectTangent,
    item_tangent,
    like,
    number_type,
    real_type,
    refuse_computed,
    unknown,
    user_class,
)
from gibbous.rules.emit import WriteEmit
from gibbous.rules.list_writes import LIST_ORDERS, LIST_WRITES, list_order, list_write


#: Python's in-place operators and the operators they are without the write
IN_PLACE_OF = {
    getattr(operator, f"i{n}"): getattr(operator, n if n not in ("and", "or") else f"{n}_")
    for n in "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift".split()
}

_LINEAR_IN_PLACE = {operator.iadd, operator.isub}

#: user registrations: fn -> (written positions / keyword names, stateful tangent function)
_USER: dict[object, tuple[tuple[int | str, ...], t.Callable[..., t.Any]]] = {}


def _array(ty: T.Type) -> bool:
    return isinstance(ty, T.Array)


def written_operands(
    fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]
) -> frozenset[int]:
    """The operands (by index: positional, then keyword) a call of ``fn`` with operands of
    these types writes into, among the forms this module knows; empty for any other call."""
    n = len(types) - len(kwnames)
    try:
        user = _USER.get(fn)
    except TypeError:  # (unhashable)
        return frozenset()
    if user is not None:
        out = set()
        for w in user[0]:
            if isinstance(w, int) and w < n:
                out.add(w)
            elif isinstance(w, str) and w in kwnames:
                out.add(n + kwnames.index(w))
        return frozenset(out)
    if n and isinstance(types[0], T.List) and (
        fn in LIST_WRITES or fn in LIST_ORDERS or fn is operator.setitem
    ):
        return frozenset({0})  # (the list object: its slots, not its items' memory)
    if n == 3 and isinstance(types[0], T.Dict) and fn is operator.setitem:
        return frozenset({0})  # (the dict: its value at a key)
    if n and isinstance(types[0], T.Dict) and (fn is dict.pop or fn is operator.delitem):
        return frozenset({0})  # (the dict: the key taken out)
    if fn is runtime.cell_set:
        return frozenset({0})  # (the cell: its contents)
    if fn is runtime.dict_merge and n == 2:
        return frozenset({0})  # (the dict ``f(**a, **b)`` is called with)
    if fn in (setattr, delattr) and n == (3 if fn is setattr else 2) and _followed(types[0]):
        return frozenset({0})  # (the object: its attribute)
    if fn is operator.setitem and n == 3 and isinstance(types[0], T.Any):
        return frozenset({0})  # (an array whose type inference could not tell: checked)
    if fn is np.copyto and n >= 2 and isinstance(types[0], T.Any):
        return frozenset({0})  # (the same)
    if "out" in kwnames:
        i = n + kwnames.index("out")
        return frozenset({i}) if _array(types[i]) else frozenset()
    if isinstance(fn, np.ufunc) and n == fn.nin + 1 and fn.nout == 1 and _array(types[fn.nin]):
        return frozenset({fn.nin})  # (out by position)
    if n and _array(types[0]):
        if fn is operator.setitem or fn in IN_PLACE_OF:
            return frozenset({0})
        if fn is np.copyto or fn is np.ndarray.fill:
            return frozenset({0})
    return frozenset()


def direct(
    fn: object,
    types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    varied: tuple[bool, ...],
    reversible: bool,
) -> WriteEmit | None:
    """The rule of a write that needs no other rule: item assignment, ``copyto``, ``fill``,
    ``+=`` / ``-=``, a stateful ``matmul(out=)``, a user's registration."""
    n = len(types) - len(kwnames)
    try:
        user = _USER.get(fn)
    except TypeError:  # (unhashable: no rule here)
        return None
    if user is not None:  # (a function called at run time: no program to differentiate again)
        return None if any(varied[n:]) or reversible else _user_emit(fn, user[1], n)
    if n and isinstance(types[0], T.List) and not kwnames:
        if fn is operator.setitem and n == 3 or fn in LIST_WRITES:
            return list_write(t.cast(t.Callable[..., t.Any], fn), LIST_WRITES.get(fn, 2))
    if n and isinstance(types[0], T.List) and fn in LIST_ORDERS:
        # (``remove`` finds the value by equality: its tangent does not matter)
        if fn is list.sort and (n != 1 or any(varied[1:])) or fn is not list.sort and kwnames:
            return None
        return list_order(LIST_ORDERS[fn])
    if fn is runtime.cell_set and n == 2 and not kwnames:
        return _cell_set_real if reversible else _cell_set
    if fn is runtime.dict_merge and n == 2 and not kwnames:
        return _dict_merge
    if fn is operator.setitem and n == 3 and not kwnames and isinstance(types[0], T.Dict):
        return list_write(operator.setitem, 2)  # (``d[k] = v``: ``dd[k] = dv``)
    if fn is dict.pop and n in (2, 3) and not kwnames and isinstance(types[0], T.Dict):
        return list_write(dict.pop, 2)  # (``d.pop(k[, default])``: ``dd.pop(k[, ddefault])``)
    if fn is operator.delitem and n == 2 and not kwnames and isinstance(types[0], T.Dict):
        return list_write(operator.delitem, None)  # (``del d[k]``: ``del dd[k]``)
    if fn is setattr and n == 3 and not kwnames:
        return _setattr
    if fn is delattr and n == 2 and not kwnames:
        return _delattr
    if fn is operator.setitem and n == 3 and not kwnames and isinstance(types[0], T.Any):
        if not _number(types[2]):
            return None
        return _setitem_checked_real if reversible else _assign(setitem_checked, value=2)
    if fn is operator.setitem and n == 3 and not kwnames and _number(types[2]):
        return _assign(operator.setitem, value=2)
    if fn is np.copyto and n >= 2 and set(kwnames) <= {"casting", "where"} and _number(types[1]):
        if isinstance(types[0], T.Any):  # (checked to be an array first)
            return _checked_first(_assign(np.copyto, value=1))
        return _assign(np.copyto, value=1)
    if fn is np.ndarray.fill and n == 2 and not kwnames and _number(types[1]):
        return _assign(np.ndarray.fill, value=1)
    if fn in _LINEAR_IN_PLACE and n == 2 and not kwnames:
        return _linear_in_place(fn)
    if not reversible:  # (reverse mode differentiates the plain forms: no state there)
        ufunc = _in_place_ufunc(fn) if n == 2 and not kwnames else None
        if isinstance(fn, np.ufunc) and fn.nout == 1 and (
            kwnames == ("out",) and n == fn.nin or not kwnames and n == fn.nin + 1
        ):
            ufunc = fn  # (out by keyword or by position)
        target = types[0 if ufunc is not fn else -1]  # (the written array)
        if ufunc is not None and _ufunc_partials(ufunc) and _float_array(target):
            if all(real_type(ty) and not isinstance(ty, T.Any) for ty in types):
                return _ufunc_out(fn, ufunc, ufunc is not fn, varied[: ufunc.nin])
        if ufunc is not None and _complex_partials(ufunc) and _complex_array(target):
            if all(number_type(ty) and not unknown(ty) for ty in types):
                return _ufunc_out(fn, ufunc, ufunc is not fn, varied[: ufunc.nin], True)
    added = LINEAR.get(fn)
    if added is not None and "out" in kwnames and "where" not in kwnames:
        given = set(range(n)) | set(kwnames)
        others = [v for k, v in enumerate(varied) if 0 < k and k != n + kwnames.index("out")]
        if not (given & added) and not any(others):
            return _linear_out(t.cast(t.Callable[..., t.Any], fn), n)
    if (
        (fn is np.matmul or fn is np.dot)
        and (n == 2 and kwnames == ("out",) or n == 3 and not kwnames)
        and not reversible  # (reverse mode differentiates the plain form: no state there)
        and all(_matrix(ty) for ty in types)
        and len({t.cast(T.Array, ty).dtype for ty in types}) == 1
    ):
        return _matmul_out(t.cast(t.Callable[..., t.Any], fn))
    return None


def plain(
    fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]
) -> tuple[object, tuple[T.Type, ...], tuple[str, ...], int] | None:
    """The call without its write (``z *= x`` is ``z * x``; ``f(x, out=z)`` is ``f(x)``) and
    the operand written: ``(plain_fn, its types, its keywords, written)``, or None."""
    n = len(types) - len(kwnames)
    if fn in IN_PLACE_OF and n == 2 and not kwnames and _array(types[0]):
        return IN_PLACE_OF[fn], types, (), 0
    if "out" in kwnames and ("where" not in kwnames or isinstance(fn, np.ufunc)):
        i = kwnames.index("out")  # (a ufunc's ``where``: the write's, ``write_through_plain``)
        keep = [k for k in range(len(types)) if k != n + i]
        rest = tuple(k for k in kwnames if k != "out")
        return fn, tuple(types[k] for k in keep), rest, n + i
    if isinstance(fn, np.ufunc) and n == fn.nin + 1 and "where" not in kwnames:
        keep = [k for k in range(len(types)) if k != fn.nin]  # (out by position)
        return fn, tuple(types[k] for k in keep), kwnames, fn.nin
    return None


def _number(ty: T.Type) -> bool:
    """A value whose tangent can be written into an array: a number or an array (a nested
    list or tuple of them would need one made of its items' tangents: not done)."""
    return isinstance(ty, (T.Float, T.Int, T.Bool, T.Const, T.Array, T.Any))


def _float_array(ty: T.Type) -> bool:
    return isinstance(ty, T.Array) and ty.dtype is not None and np.dtype(ty.dtype).kind == "f"


def _in_place_ufunc(fn: object) -> np.ufunc | None:
    """The ufunc an in-place operator on an array is (``z *= x``: ``multiply(z, x, out=z)``),
    as the reverse rules have it."""
    from gibbous.rules import inplace  # (registers rules: not at this module's import)

    return inplace.IN_PLACE_OPERATORS.get(t.cast(t.Any, fn))


def _ufunc_partials(ufunc: np.ufunc) -> t.Any:
    from gibbous.rules import inplace  # (registers rules: not at this module's import)

    table = inplace.UNARY_PARTIALS if ufunc.nin == 1 else inplace.BINARY_PARTIALS
    return table.get(ufunc)


def _complex_array(ty: T.Type) -> bool:
    return isinstance(ty, T.Array) and ty.dtype == "complex128"


def _complex_partials(ufunc: np.ufunc) -> t.Any:
    from gibbous.rules import inplace  # (registers rules: not at this module's import)

    return inplace.COMPLEX_TANGENTS.get(ufunc)


def _matrix(ty: T.Type) -> bool:
    return _float_array(ty) and t.cast(T.Array, ty).ndim in (1, 2)


# --------------------------------------------------------------------------------------------
# The emitters


def _assign(fn: t.Callable[..., t.Any], value: int) -> WriteEmit:
    """``fn(z, ..., x, ...)`` writes ``x`` (operand ``value``) into ``z``: the same call writes
    ``dx`` (or 0) into ``dz``; the other operands (an index, ``where=``) are the primal's."""

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        z = b.call(fn, *args, kwargs=kwargs, type=T.NONE)
        dz, dx = d[0], d[value]
        assert dz is not None  # (the transform gives every written array a tangent)
        targs = [dz, *args[1:]]
        targs[value] = Constant(0.0) if dx is None else dx
        tkw = {k: v for k, v in kwargs.items() if k != "casting"}
        b.call(fn, *targs, kwargs=tkw, type=T.NONE)
        return z, None

    return emit


def _dict_merge(
    b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
) -> tuple[Value, Value | None]:
    """``dict_merge(d, other)`` (``f(**a, **b)``): the same merge of ``other``'s tangent (a
    dict of its values' tangents, zeros where it has none) into ``d``'s."""
    dd = d[0]
    assert dd is not None  # (the transform gives every written dict a tangent)
    other = d[1] if d[1] is not None else b.call(like, args[1], Constant(None), type=T.ANY)
    z = b.call(runtime.dict_merge, *args, type=T.NONE)
    b.call(runtime.dict_merge, dd, other, type=T.NONE)
    return z, None


def _cell_set(
    b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
) -> tuple[Value, Value | None]:
    """``cell.cell_contents = v`` (a local a nested function captured, assigned): the cell's
    box (``TangentCell``) takes v's tangent, so every function holding the box sees it."""
    dcell = d[0]
    assert dcell is not None  # (the transform gives every written cell a box)
    z = b.call(runtime.cell_set, *args, type=T.NONE)
    dv = Constant(None) if d[1] is None else d[1]
    b.call(setattr, dcell, "contents", dv, type=T.NONE)
    return z, None


def _cell_set_real(
    b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
) -> tuple[Value, Value | None]:
    """The same where the cell's tangent is a real cell (``gibbous.library.python.closures``, in
    a program reverse mode differentiates): it takes v's tangent as the cell takes v."""
    dcell = d[0]
    assert dcell is not None
    z = b.call(runtime.cell_set, *args, type=T.NONE)
    dv = d[1] if d[1] is not None else item_tangent(b, args[1], None)
    b.call(runtime.cell_set, dcell, dv, type=T.NONE)
    return z, None


def _setattr(
    b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
) -> tuple[Value, Value | None]:
    """``obj.name = v``: the object's tangent (``ObjectTangent``) takes v's."""
    assert d[0] is not None  # (the transform gives every written object a tangent)
    b.call(refuse_computed, args[0], args[1], type=T.NONE)  # (before the primal writes)
    z = b.call(setattr, *args, type=T.NONE)
    dv = Constant(None) if d[2] is None else d[2]
    b.call(set_field, d[0], args[1], dv, type=T.NONE)
    return z, None


def _delattr(
    b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
) -> tuple[Value, Value | None]:
    """``del obj.name``: the object's tangent loses the attribute's too."""
    assert d[0] is not None  # (the transform gives every written object a tangent)
    b.call(refuse_computed, args[0], args[1], type=T.NONE)
    z = b.call(delattr, *args, type=T.NONE)
    b.call(set_field, d[0], args[1], Constant(None), type=T.NONE)
    return z, None


def _followed(ty: T.Type) -> bool:
    return isinstance(ty, T.Object) and user_class(ty.cls)


def set_field(dobj: t.Any, name: str, dv: t.Any) -> None:
    """``obj.name = v`` of a plain attribute (``refuse_computed``): the object's tangent takes
    v's (None: zero)."""
    if type(dobj) is ObjectTangent:
        if dv is None:
            dobj.fields.pop(name, None)
        else:
            dobj.fields[name] = dv


runtime.register_object(set_field, "forward_writes.set_field")
runtime.register_object(refuse_computed, "forward_writes.refuse_computed")


def written_array(z: t.Any) -> None:
    """Refuse ``z[i] = x`` into a value whose type inference could not tell (an attribute)
    unless it is an array (and its tangent, an array too)."""
    if not isinstance(z, np.ndarray):
        raise ForwardModeError(
            f"forward mode: z[i] = x into a {type(z).__name__} whose type the build could not "
            "tell (an attribute, an item of a container): this version follows such writes "
            "into arrays only"
        )


def array_of(z: t.Any) -> np.ndarray:
    """``z``, an array (refused otherwise): a value whose type the build could not tell,
    typed as an array in the program, so that a write's rule for arrays is found for it."""
    written_array(z)
    return t.cast(np.ndarray, z)


def setitem_checked(z: t.Any, index: t.Any, x: t.Any) -> None:
    """``z[index] = x`` into an array whose type inference could not tell, checked here."""
    written_array(z)
    z[index] = x


def _checked_first(write: WriteEmit) -> WriteEmit:
    """``write`` into a value whose type inference could not tell, and into its tangent, each
    checked to be an array first and typed as one (``array_of``, whose reverse rule is the
    array itself): reverse mode then finds the write's rule for arrays (in a Hessian-vector
    product, ``setitem_checked``'s and ``copyto``'s form)."""

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        array = T.Array(None, None)
        z = b.call(array_of, args[0], type=array)
        dz = d[0] if d[0] is None else b.call(array_of, d[0], type=array)
        return write(b, [z, *args[1:]], kwargs, [dz, *d[1:]])

    return emit


_setitem_checked_real = _checked_first(_assign(operator.setitem, value=2))


runtime.register_object(setitem_checked, "forward_writes.setitem_checked")
runtime.register_object(written_array, "forward_writes.written_array")
runtime.register_object(array_of, "forward_writes.array_of")


def _linear_in_place(fn: object) -> WriteEmit:
    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        z = b.call(fn, *args, type=args[0].type)
        dz, dx = d
        assert dz is not None
        if dx is not None:
            b.call(fn, dz, dx, type=args[0].type)
        return z, dz

    return emit


class MatmulOut:
    """``np.matmul(A, B, out=C)`` with its tangent, the stateful way: ``dC = dA @ B + A @ dB``
    goes into ``dC``, the second product through a buffer this call site keeps (one per
    thread: two threads running one rule must not share it), so a warm call allocates
    nothing.  The tangent is computed before the primal writes ``C``: ``C`` may be ``A`` or
    ``B`` (NumPy buffers the overlap of each product itself)."""

    __slots__ = ("fn", "local", "__weakref__")

    def __init__(self, fn: t.Callable[..., t.Any]) -> None:
        self.fn = fn
        self.local = threading.local()
        runtime.register_object(self, f"matmul_out_{fn.__name__}")  # (named in the IR's text)

    def __call__(self, a: t.Any, b: t.Any, c: t.Any, da: t.Any, db: t.Any, dc: t.Any) -> t.Any:
        fn = self.fn
        if db is not None and da is not None:
            buf = getattr(self.local, "buf", None)
            if buf is None or buf.shape != dc.shape or buf.dtype != dc.dtype:
                buf = self.local.buf = np.empty_like(dc)
            fn(a, db, out=buf)
            fn(da, b, out=dc)
            dc += buf
        elif db is not None:
            fn(a, db, out=dc)
        elif da is not None:
            fn(da, b, out=dc)
        else:
            dc.fill(0.0)
        return fn(a, b, out=c)

    def __repr__(self) -> str:
        return f"MatmulOut({self.fn.__name__})"


def _matmul_out(fn: t.Callable[..., t.Any]) -> WriteEmit:
    site = MatmulOut(fn)  # (one per call site: ``direct`` is asked once per site)

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        da, db, dc = (Constant(None) if x is None else x for x in d)
        c = args[2] if len(args) == 3 else kwargs["out"]  # (out by position or keyword)
        z = b.call(site, *args[:2], c, da, db, dc, type=c.type)
        return z, dc

    return emit


class UfuncOut:
    """``ufunc(*operands, out=z)``, or ``z op= y``, with its tangent, allocating nothing warm.
    Each operand's term ``f_i'(x) dx_i`` comes from the reverse rules' kernel of the same
    formula (``gibbous.rules.inplace``: the partial ``g * f_i'(x)`` with ``g = dx_i``, on real
    operands), written with ``out=`` into buffers this call site keeps (one set per thread),
    all before the primal writes (an operand may be ``z``); then ``dz`` is overwritten."""

    __slots__ = ("fn", "partials", "steps", "nin", "in_place", "local", "__weakref__")

    def __init__(
        self,
        fn: t.Callable[..., t.Any],
        ufunc: np.ufunc,
        in_place: bool,
        varied: tuple[bool, ...],
        complex_: bool = False,
    ) -> None:
        self.fn, self.nin, self.in_place = fn, ufunc.nin, in_place
        self.partials = _complex_partials(ufunc) if complex_ else _ufunc_partials(ufunc)
        # (the operands with a tangent and a partial, known when the rule is built)
        self.steps = tuple(
            (i, p) for i, (p, v) in enumerate(zip(self.partials.fns, varied)) if p is not None and v
        )
        self.local = threading.local()
        runtime.register_object(self, f"ufunc_out_{ufunc.__name__}")

    def __call__(self, *a: t.Any) -> t.Any:
        n = self.nin
        ops = a[:n]
        rest = a[n:] if self.in_place else a[n + 1 :]
        tangents, dz = rest[:n], rest[n]
        state = getattr(self.local, "state", None)
        if state is None or state[0] != (dz.shape, dz.dtype):
            state = self.local.state = self._state(dz)
        _, acc, term, work = state
        if self.partials.singular:  # (a kernel may divide by 0 where it then writes 0)
            with np.errstate(all="ignore"):
                self._terms(tangents, ops, acc, term, work)
        else:
            self._terms(tangents, ops, acc, term, work)
        z = self.fn(*ops) if self.in_place else self.fn(*ops, out=a[n])
        if self.steps:
            np.copyto(dz, acc)
        else:
            dz.fill(0.0)
        return z

    def _terms(
        self, tangents: tuple[t.Any, ...], ops: tuple[t.Any, ...], acc: t.Any, term: t.Any, work: t.Any
    ) -> None:
        for k, (i, partial) in enumerate(self.steps):
            if k == 0:
                partial(tangents[i], *ops, acc, work)
            else:
                partial(tangents[i], *ops, term, work)
                np.add(acc, term, out=acc)

    def _state(self, like: t.Any) -> tuple[t.Any, ...]:
        from gibbous.rules.inplace import Work

        p = self.partials
        work = Work(
            tuple(np.empty_like(like) for _ in range(p.tmp)),
            tuple(np.empty(like.shape, np.bool_) for _ in range(p.mask)),
        )
        return ((like.shape, like.dtype), np.empty_like(like), np.empty_like(like), work)

    def __repr__(self) -> str:
        return f"UfuncOut({getattr(self.fn, '__name__', self.fn)})"


def _ufunc_out(
    fn: object, ufunc: np.ufunc, in_place: bool, varied: tuple[bool, ...], complex_: bool = False
) -> WriteEmit:
    site = UfuncOut(t.cast(t.Callable[..., t.Any], fn), ufunc, in_place, varied, complex_)

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        nin = ufunc.nin
        tangents = [Constant(None) if x is None else x for x in d]
        written = args[0] if in_place else args[nin] if len(args) > nin else kwargs["out"]
        dz = tangents[0] if in_place else tangents[-1]
        outs = [] if in_place else [written]
        z = b.call(site, *args[:nin], *outs, *tangents[:nin], dz, type=written.type)
        return z, dz

    return emit


def sort_with_tangent(x: t.Any, dx: t.Any, *args: t.Any, **kwargs: t.Any) -> None:
    """``x.sort(...)`` of an array found at run time (NumPy's own Python: np.sort's,
    np.unique's), with its tangent ``dx`` (an array beside it, or None): x's values move, their
    tangents with them, by the permutation of a stable sort (the reverse rule's: equal values
    are interchangeable), taken before the primal sorts.  (Where the call is known when the
    rule is built, forward mode refuses it: a warm call would allocate the permutation.)"""
    axis = args[0] if args else kwargs.get("axis", -1)
    order = args[2] if len(args) > 2 else kwargs.get("order")
    if order is not None:
        raise ForwardModeError("forward mode: ndarray.sort with order=: no forward rule")
    if type(dx) is np.ndarray and dx.shape == x.shape:
        perm = np.argsort(x, axis=axis, kind="stable")
        x.sort(*args, **kwargs)
        np.copyto(dx, np.take_along_axis(dx, perm, axis))
        return
    if dx is not None:
        raise ForwardModeError(
            "forward mode: ndarray.sort of an array whose tangent is not an array beside it"
        )
    x.sort(*args, **kwargs)


def _linear_out(fn: t.Callable[..., t.Any], n: int) -> WriteEmit:
    """``f(x, ..., out=z)`` of a function linear in ``x``: ``f(dx, ..., out=dz)`` first (``z``
    may be ``x``), then the primal; nothing allocated."""

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        dz = d[n + list(kwargs).index("out")]
        assert dz is not None
        if d[0] is None:
            b.call(np.copyto, dz, Constant(0.0), type=T.NONE)
        else:
            b.call(fn, d[0], *args[1:], kwargs={**kwargs, "out": dz}, type=T.ANY)
        z = b.call(fn, *args, kwargs=kwargs, type=kwargs["out"].type)
        return z, dz

    return emit


#: functions linear in their first operand (``gibbous.rules.frules.register_linear`` adds
#: them), with the operands they add as a constant term, whose ``out=`` form ``_linear_out``
#: writes
LINEAR: dict[object, frozenset[int | str]] = {}


class StatefulForward:
    """A user's stateful forward rule at one call site: ``rule(state, *args, *tangents,
    **kwargs) -> (z, dz, state)`` gets the state it returned the last time it ran here (in
    this thread), None the first time."""

    __slots__ = ("fn", "rule", "local", "__weakref__")

    def __init__(self, fn: object, rule: t.Callable[..., t.Any]) -> None:
        self.fn, self.rule = fn, rule
        self.local = threading.local()
        runtime.register_object(self, f"stateful_{getattr(fn, '__name__', 'rule')}")

    def __call__(self, *a: t.Any, **kwargs: t.Any) -> tuple[t.Any, t.Any]:
        local = self.local
        z, dz, local.state = self.rule(getattr(local, "state", None), *a, **kwargs)
        return z, dz

    def __repr__(self) -> str:
        return f"StatefulForward({getattr(self.fn, '__name__', self.fn)!s})"


def _user_emit(fn: object, rule: t.Callable[..., t.Any], n: int) -> WriteEmit:
    site = StatefulForward(fn, rule)

    def emit(
        b: Builder, args: list[Value], kwargs: dict[str, Value], d: list[Value | None]
    ) -> tuple[Value, Value | None]:
        tangents = [Constant(None) if x is None else x for x in d[:n]]
        made = b.call(site, *args, *tangents, kwargs=kwargs, type=T.ANY)
        z = b.call(operator.getitem, made, 0, type=T.ANY)
        return z, b.call(operator.getitem, made, 1, type=T.ANY)

    return emit


def register_writing(
    fn: object, writes: t.Iterable[int], rule: t.Callable[..., t.Any]
) -> None:
    """``rule`` is the stateful forward rule of ``fn``, which writes into its positional
    arguments ``writes`` (``gibbous.frule(fn, writes=...)``)."""
    _USER[fn] = (tuple(writes), rule)


# --------------------------------------------------------------------------------------------
# Run-time helpers the transform writes calls of


def fresh(z: t.Any, dz: t.Any, *pairs: t.Any) -> t.Any:
    """``dz`` as the tangent of ``z``, an array a write may reach: aliased as ``z`` is.
    ``pairs`` are ``(a, da)`` of the call's operands with tangents.  Where ``z`` is a view of
    ``a``, ``dz`` must be the same view of ``da`` (else a write through ``z`` would miss
    ``dz``: refused); where ``z`` is new memory, ``dz`` must be too (a rule may return an
    operand's tangent itself, ``d(x + 0) = dx``: copied)."""
    if type(z) is not np.ndarray:
        return dz
    copy = type(dz) is not np.ndarray or dz.shape != z.shape or not dz.flags.writeable
    for i in range(0, len(pairs), 2):
        a, da = pairs[i], pairs[i + 1]
        if da is None or type(a) is not np.ndarray:
            continue
        shares = np.may_share_memory(z, a)
        if shares and (copy or not np.may_share_memory(dz, da)):
            raise ForwardModeError(
                "forward mode: an array written into later is a view of another, but its "
                "tangent is not the same view of the other's tangent (a reshape that copied "
                "one and not the other?); copy the array before writing into it"
            )
        if not shares and type(dz) is np.ndarray and np.may_share_memory(dz, da):
            copy = True
    if copy:
        return np.array(np.broadcast_to(dz, z.shape), dtype=np.result_type(z.dtype, np.float64))
    return dz


runtime.register_object(fresh, "forward.fresh")


def written_tangent(x: t.Any, dx: t.Any, d: t.Any) -> t.Any:
    """The tangent after ``x op= y`` of an ``x`` whose type the build could not tell, in a
    Hessian-vector product's program: ``d`` (the tangent of ``x op y``) for a number, which
    the operator replaced; for an array, which it wrote into, ``d`` written into ``dx``, its
    tangent, so that every name of the array sees it."""
    if type(x) is not np.ndarray:
        return d
    if type(dx) is not np.ndarray or dx.shape != x.shape:
        raise ForwardModeError(
            "forward mode: an in-place operator writes into an array here that has no tangent "
            "of its own (an array the differentiated code did not get or make from an "
            "argument): its other names' tangents would miss the write"
        )
    np.copyto(dx, d)
    return dx


runtime.register_object(written_tangent, "forward.written_tangent")
