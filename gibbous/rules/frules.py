"""Forward-mode rules of primitives: a call's tangent from its operands' tangents.

A forward rule of ``fn`` is made per call site, for the operands' static types and which of
them have tangents.  The forward program makes the primal call as the primal does (so the
value is the primal's, bit for bit), then the tangent, which reads the operands and the
result ``z``.  Where the types are known the tangent is *written out* (``Emit``): plain calls
of NumPy functions and Python operators, which the backend compiles as it compiles the
primal's (``dz = dx * cos(x)``) and which the reverse mode can differentiate again.  Where a
type is ``Any`` it is a *tangent function* ``tangent(z, *operands, *tangents, **kwargs)``,
called, which checks at run time that it got real numbers or arrays.

The derivatives are not written again here:

* elementwise functions take the partials of ``gibbous.rules.formulas``, the table the
  reverse rules are rendered from: a formula is ``g * conj(f'(x))``, and on real operands it
  is the tangent ``f'(x) dx`` with ``g`` the tangent ``dx`` (``register_elementwise``, called
  by ``elementwise_variants.register_unary`` / ``register_binary``, which register the reverse
  rules of the same callables with the same formulas);
* a function linear in one operand is its own derivative: ``sum(dx)``, ``dx[i]``,
  ``dx.reshape(s)`` (``register_linear``); a bilinear one, ``matmul``, is ``dA @ B + A @ dB``;
* a function registered as having no derivative (``zero_derivative``) has a result without a
  tangent (``ZERO``).

Complex operands take the formulas' complex forms (``formulas.complex_tangent``: the adjoint of
the reverse formula under the real inner product, docs/decisions.md, "Complex values in
forward mode"); linear and bilinear functions are their own derivatives on them too.
"""

from __future__ import annotations

import math
import operator
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Value
from gibbous.infer.implementations import twin_helper, twin_module
from gibbous.rules import inplace_forward
from gibbous.rules.formulas import Expr, complex_tangent
from gibbous.rules.emit import Emit as Emit
from gibbous.rules.registry import registering_module, registers_for_caller
from gibbous.rules.emit import ForwardModeError
from gibbous.rules.emit import Keywords as Keywords
from gibbous.rules.emit import (
    Inexpressible,
    Operand,
    Writer,
    complex_type,
    number_operands,
    number_type,
    no_float_items as no_float_items,
    operand_tangent,
    real_operands,
    real_type,
    scalar_of,
    static_types,
    unknown,
)
from gibbous.rules.emit import Tangent as Tangent
from gibbous.rules.emit import Tangents as Tangents
from gibbous.rules.emit import Values as Values
from gibbous.rules.emit import checked as checked
from gibbous.rules.emit import reuse as reuse
from gibbous.rules.emit import reuse_right as reuse_right
from gibbous.rules.emit import elementwise_type as elementwise_type
from gibbous.rules.emit import fit as fit
from gibbous.rules.emit import like as like
from gibbous.rules.emit import item_tangent
from gibbous.rules.emit import scratch
from gibbous.rules.emit import zero as zero

#: ``make(types, kwnames, varied)``: the tangent of a call with operands of these types (the
#: last ``len(kwnames)`` passed by keyword) of which ``varied`` have tangents, or None.
Maker = t.Callable[[tuple[T.Type, ...], tuple[str, ...], tuple[bool, ...]], "Tangent | Emit | None"]


class _Zero:
    """The forward rule of a function without a derivative: its result has no tangent."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ZERO"


ZERO = _Zero()

_RULES: dict[object, list[Maker]] = {}
_ORIGINS: dict[object, list[str]] = {}  # (the module of each registration, as ``_RULES``)
_NUMERIC: dict[object, list[bool]] = {}  # (whether each is a rule for numbers and arrays)
registers_for_caller(__name__)  # (``register_linear`` and the rest: their callers register)


def register(fn: object, make: Maker, *, numeric: bool = False) -> None:
    """``make`` makes ``fn``'s tangent functions for the types it takes (None for others).

    Precedence says itself, whatever the order modules load in: a hand-written maker (for a
    kind of value: containers, strings, objects, dicts, operands of unknown type) is tried
    before a declaration for numbers and arrays (``numeric``: a linear, bilinear or
    elementwise function, a ``TangentFormula``, a user's ``frule``); among rules of one kind,
    the later registration first (``math.log`` has one for one operand and one for two)."""
    _RULES.setdefault(fn, []).append(make)
    origin = registering_module()
    _ORIGINS.setdefault(fn, []).append(origin)
    # (its tangent functions, and the helpers they call, are derived again by reverse mode
    # in a Hessian-vector product: ``gibbous.infer.implementations.tangent_to_derive``)
    twin_module(origin)
    _NUMERIC.setdefault(fn, []).append(numeric)


def forward_registrations() -> list[tuple[object, tuple[str, ...]]]:
    """Every callable with a forward rule, and the modules that registered its rules."""
    return [(fn, tuple(_ORIGINS[fn])) for fn in _RULES]


def tried(fn: object) -> list[Maker]:
    """``fn``'s makers in the order they are tried (``register``)."""
    makers, numeric = _RULES.get(fn, []), _NUMERIC.get(fn, [])
    pairs = list(reversed(list(zip(makers, numeric))))
    return [m for m, n in pairs if not n] + [m for m, n in pairs if n]


def forward_maker(fn: object) -> Maker | None:
    try:
        if fn not in _RULES:
            return None
    except TypeError:  # unhashable callables have no forward rule
        return None

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        for maker in tried(fn):  # (read when asked: a rule registered later is seen)
            made = maker(types, kwnames, varied)
            if made is not None:
                return made
        return None

    return make


#: Written forms a program that reverse mode differentiates again (a Hessian-vector
#: product's) takes in place of a tangent function, which it cannot see into: for operands of
#: a type the build could not tell (``Any``), where the formula holds for any real number or
#: array, checked at run time first (``_register_unknown``); for closures' cells, real cells
#: holding the tangents (``gibbous.library.python.closures``).
_WRITTEN: dict[object, list[Maker]] = {}


def register_written(fn: object, make: Maker) -> None:
    """``make`` makes ``fn``'s written forms for the programs reverse mode differentiates."""
    _WRITTEN.setdefault(fn, []).append(make)


def written_form(
    fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
) -> Emit | None:
    """``fn``'s written form for these types (the latest registration that makes one)."""
    for maker in reversed(_WRITTEN.get(fn, [])):
        made = maker(types, kwnames, varied)
        if isinstance(made, Emit):
            return made
    return None


def _checked_emit(emit: Emit, sequences: bool, operand: int | None, linear: bool) -> Emit:
    check = number_operands if linear else real_operands

    def checked_first(
        b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
    ) -> Value:
        where = args if operand is None else args[operand : operand + 1]
        b.call(check, sequences, *(a for a in where if unknown(a.type)), type=T.NONE)
        if not sequences:  # (a bool that passed the check: its tangent is zeros)
            tangents = [
                b.call(operand_tangent, a, da, type=T.ANY)
                if da is not None and unknown(a.type) and any(a is w for w in where)
                else da
                for a, da in zip(args, tangents)
            ]
        return emit.fn(b, z, args, tangents, kwargs)

    return Emit(checked_first)


def _register_unknown(
    fn: object,
    make: Maker,
    sequences: bool = False,
    operand: int | None = None,
    linear: bool = False,
) -> None:
    """``make``'s Emit, where it makes one for unknown types, checked first (a written form):
    the operands, or the one ``operand`` a linear function's tangent is taken along (an index
    or an axis of unknown type is a constant, whatever it is): real, or with ``linear`` (a
    linear or bilinear function's tangent, which holds for complex values too) complex too."""

    def made(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        emit = make(types, kwnames, varied)
        if not isinstance(emit, Emit):
            return None
        return _checked_emit(emit, sequences, operand, linear)

    register_written(fn, made)


def has_forward_rule(fn: object) -> bool:
    return forward_maker(fn) is not None


def frule(
    fn: object, writes: t.Iterable[int] | None = None
) -> t.Callable[[t.Callable[..., t.Any]], t.Callable[..., t.Any]]:
    """Decorator: ``tangent(z, *operands, *tangents, **kwargs) -> dz`` is ``fn``'s forward
    rule, for real operands (float and real-array tangents; ``tangents[i]`` None where operand
    ``i`` has none).  It is called after ``fn`` itself, with its result ``z``.  A forward rule
    registered for a callable gibbous already has one is tried first.

    With ``writes`` (the positions of the arguments ``fn`` writes into), the rule is
    *stateful* and runs the primal itself: ``rule(state, *args, *tangents, **kwargs) -> (z,
    dz, state)`` writes the tangent of each written argument into that argument's tangent
    (``tangents[i]``, an array beside it) and returns the state to keep for the next call at
    this call site (None the first time; one per thread).  See docs/rules.md."""

    def register_tangent(tangent: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
        if writes is not None:
            inplace_forward.register_writing(fn, writes, tangent)
            return tangent

        def shaped(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
            return like(z, tangent(z, *a, **kwargs))  # (None: zeros; broadcast to z)

        def make(
            types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
        ) -> Tangent | Emit | None:
            return checked(shaped, types) if all(map(real_type, types)) else None

        register(fn, make, numeric=True)
        return tangent

    return register_tangent


# --------------------------------------------------------------------------------------------
# Elementwise functions: the formulas of the reverse rules

_QUIET_OPS = {"var", "neg", "conj", "+", "-"}  # formulas that cannot overflow or divide


def register_elementwise(
    fns: t.Iterable[object],
    grads: t.Sequence[t.Callable[..., t.Any] | None],
    formula: t.Mapping[t.Any, Expr],
    functions: t.Mapping[str, t.Callable[..., t.Any]] = {},
    complex_ok: bool = True,
) -> None:
    """The forward rule of elementwise ``fns`` from their reverse partials ``grads`` (the
    NumPy renderings ``g(g, x, z)`` / ``g(g, x, y, z)`` of ``gibbous.rules.formulas``; None:
    that operand has no derivative); ``formula``: each rendering's formula (the library's
    table, ``gibbous.library.elementwise.tables.FORMULA``); ``functions``: the callables the
    written form may call for the names of the formulas' functions besides NumPy's (a formula
    calling another function has a tangent function, not a written form); ``complex_ok``:
    whether the formulas hold for complex operands (no forward rule takes them otherwise)."""
    FORMULA = formula
    grads = tuple(grads)
    quiet = all(g is None or g in FORMULA and FORMULA[g].ops() <= _QUIET_OPS for g in grads)

    formulas = [None if g is None else FORMULA.get(g) for g in grads]

    complex_forms = [None if f is None or not complex_ok else complex_tangent(f) for f in formulas]

    def expressible(varied: tuple[bool, ...]) -> bool:
        """Every varied operand with a derivative has a formula (one without, none: ``y`` of
        ``copysign(x, y)``)."""
        return all(f is not None or g is None for f, g, v in zip(formulas, grads, varied) if v)

    def make(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        # (a varied operand's formula turns for complex values: ``complex_tangent``)
        turns = all(f is not None for f, v in zip(complex_forms, varied) if v)
        if not kwnames and len(types) == len(grads) and any(map(complex_type, types)):
            made = _complex_elementwise(complex_forms, types, varied, functions)
            if made is not None or static_types(types) or not turns:
                return made  # (a complex constant beside operands of unknown type: below)
        if kwnames or len(types) != len(grads) or not all(map(_number_or_unknown, types)):
            return None
        if static_types(types) and expressible(varied):  # (real: complex ones, above)
            arrays = any(isinstance(ty, T.Array) for ty in types)
            emit = _elementwise_emit(formulas, arrays, functions)
            try:  # (written once now, on dummy values, to learn whether it can be)
                _probe(emit, types, varied)
                return emit
            except Inexpressible:
                pass
        # (a complex value found at run time, where ``turns``: ``conj(P(conj(d)))``, the
        # adjoint of the gradient's map, as ``complex_tangent`` writes it, its real part for
        # a real result; else ``checked`` refuses it)
        if len(grads) == 1:
            g1 = grads[0]
            assert g1 is not None

            def unary(z: t.Any, x: t.Any, dx: t.Any) -> t.Any:
                if dx is None:
                    return like(z, None)
                if turns and (np.iscomplexobj(x) or np.iscomplexobj(dx)):
                    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                        return like(z, _real_for(z, np.conj(g1(np.conj(dx), x, z))))
                if quiet:
                    return like(z, g1(dx, x, z))
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    return like(z, g1(dx, x, z))

            return checked(unary, types, linear=turns)
        gx, gy = grads

        def binary(z: t.Any, x: t.Any, y: t.Any, dx: t.Any, dy: t.Any) -> t.Any:
            c = turns and (
                np.iscomplexobj(x) or np.iscomplexobj(y) or np.iscomplexobj(dx) or np.iscomplexobj(dy)
            )
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                d = None if dx is None or gx is None else _along(gx, c, dx, x, y, z)
                if dy is not None and gy is not None:
                    e = _along(gy, c, dy, x, y, z)
                    d = e if d is None else d + e
            return like(z, d if not c or d is None else _real_for(z, d))

        return checked(binary, types, linear=turns)

    def make_unknown(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        if kwnames or len(types) != len(grads) or not all(map(real_type, types)):
            return None
        if not expressible(varied):
            return None
        return _written(formulas, types, varied, functions)

    def make_unknown_complex(
        types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
    ) -> Tangent | Emit | None:
        """For operands that may be complex at run time: the formulas' complex forms, where
        each varied one's reads the same for real and complex values (no ``conj``, no
        comparison, no function whose form depends on the type: ``mul``, ``exp``, ``sin``)."""
        if kwnames or len(types) != len(grads) or not all(map(_number_or_unknown, types)):
            return None
        if not all(f is not None and _typeless(f) for f, v in zip(complex_forms, varied) if v):
            return None
        forms = [f if v else None for f, v in zip(complex_forms, varied)]
        return _written(forms, types, varied, functions)

    for fn in fns:
        register(fn, make, numeric=True)
        _register_unknown(fn, make_unknown)
        if complex_ok:  # (tried first: the latest registration that makes one)
            _register_unknown(fn, make_unknown_complex, linear=True)


#: Formulas' functions written differently for real and complex operands.
_TYPED_FUNCTIONS = frozenset(["unit", "real_log", "lift_base", "magnitude"])


def _number_or_unknown(ty: T.Type) -> bool:
    return real_type(ty) or complex_type(ty)


def _typeless(e: Expr) -> bool:
    """Whether a complex form reads the same written for real or complex operands."""
    return not e.ops() & {"conj", ">", "<"} and not e.calls() & _TYPED_FUNCTIONS


@twin_helper  # (the tangent functions call these: derived again in a Hessian-vector product)
def _along(g: t.Callable[..., t.Any], complex_: bool, d: t.Any, *operands: t.Any) -> t.Any:
    """The tangent along ``d`` from the gradient's rendering ``g``: ``g(d, ...)`` of real
    values, ``conj(g(conj(d), ...))`` of complex ones."""
    return np.conj(g(np.conj(d), *operands)) if complex_ else g(d, *operands)


@twin_helper
def _real_for(z: t.Any, d: t.Any) -> t.Any:
    """``d``, or its real part where the result ``z`` is real (``abs`` of a complex value)."""
    return d if np.iscomplexobj(z) else np.real(d)


def _complex_elementwise(
    forms: t.Sequence[Expr | None],
    types: tuple[T.Type, ...],
    varied: tuple[bool, ...],
    functions: t.Mapping[str, t.Callable[..., t.Any]],
) -> Emit | None:
    """The written form of an elementwise function of complex operands (types known): the
    formulas' complex forms; no tangent function (None where a form is missing)."""
    if not all(map(number_type, types)) or not static_types(types):
        return None
    if any(f is None for f, v in zip(forms, varied) if v):
        return None
    return _written(forms, types, varied, functions)


def _written(
    forms: t.Sequence[Expr | None],
    types: tuple[T.Type, ...],
    varied: tuple[bool, ...],
    functions: t.Mapping[str, t.Callable[..., t.Any]],
) -> Emit | None:
    """The formulas written for arrays (NumPy's functions take numbers too), where they can
    be (written once now, on dummy values, to learn it)."""
    emit = _elementwise_emit(forms, True, functions)
    try:
        _probe(emit, types, varied)
    except Inexpressible:
        return None
    return emit


def _elementwise_emit(
    formulas: t.Sequence[Expr | None],
    arrays: bool,
    functions: t.Mapping[str, t.Callable[..., t.Any]] = {},
) -> Emit:
    names = ("x", "y")

    def emit(
        b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
    ) -> Value:
        w = Writer(b, arrays, functions)
        env: dict[str, Operand] = {"z": z, **{n: scalar_of(a) for n, a in zip(names, args)}}
        total: Operand | None = None
        for f, d in zip(formulas, tangents):
            if d is None or f is None:
                continue
            if f.op == "neg" and total is not None:  # ``a - b``: ``da - db``, not ``da + -db``
                total = w.call(operator.sub, total, w.formula(f.args[0], {**env, "g": d}))
                continue
            term = w.formula(f, {**env, "g": d})
            total = term if total is None else w.call(operator.add, total, term)
        if total is None:
            return zero(b, z)
        if w.complex_(total) and real_type(z.type) and not unknown(z.type):
            total = w.call(np.real, total)  # (``abs``: a real result's)
        return fit(b, w.value(total), z)

    return Emit(emit)


def _probe(emit: Emit, types: tuple[T.Type, ...], varied: tuple[bool, ...]) -> None:
    """Write ``emit`` into a scratch function: raises ``Inexpressible`` if it cannot be."""
    b, args, tangents = scratch(types, varied)
    z = b.call(np.add, *args, type=elementwise_type(types))  # (a stand-in for the result)
    emit.fn(b, z, args, tangents, {})


# --------------------------------------------------------------------------------------------
# Linear and bilinear functions: their own derivatives


def register_linear(
    fns: t.Iterable[object],
    operand: int = 0,
    most: int = 8,
    added: t.Collection[int | str] = (),
) -> None:
    """``fn`` is linear in operand ``operand`` and constant in the others (an index, a shape,
    an axis): its tangent is ``fn`` of that operand's tangent and the other operands.  At most
    ``most`` positional operands: the next would be ``out``, a write.  ``added`` names the
    operands (positions or keywords) that ``fn`` adds to its result, a constant term whose
    tangent is 0 (``np.diff``'s ``prepend``, ``np.sum``'s ``initial``, ``sum``'s ``start``):
    the tangent passes 0 there."""

    def make_for(fn: t.Callable[..., t.Any], written: bool = False) -> Maker:
        """(``written``: the written form for unknown types too, checked by the caller)"""
        def make(
            types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
        ) -> Tangent | Emit | None:
            n = len(types) - len(kwnames)
            if n <= operand or n > most or _writes_out(types, kwnames):
                return None
            if not number_operand(types[operand]):
                return None
            if any(v and _maybe_varied(i, types, kwnames, added) for i, v in enumerate(varied) if i != operand):
                return None  # (an index or a shape with a tangent: not this rule's)

            if static_types(types) or written:

                def emit(
                    b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
                ) -> Value:
                    d = tangents[operand]
                    if d is None:
                        return zero(b, z)
                    moved = [
                        d if i == operand else Constant(0.0) if i in added else a
                        for i, a in enumerate(args)
                    ]
                    named = {k: Constant(0.0) if k in added else v for k, v in kwargs.items()}
                    return b.call(fn, *moved, kwargs=named, type=z.type)

                return Emit(emit)

            def linear(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
                d = a[n + operand]
                if d is None:
                    return like(z, None)
                args = [0.0 if i in added else v for i, v in enumerate(a[:n])]
                args[operand] = d
                named = {k: 0.0 if k in added else v for k, v in kwargs.items()}
                return like(z, fn(*args, **named))

            # (the operand checked: an index of unknown type is a constant, a bool one too)
            only = tuple(ty if i == operand else T.NONE for i, ty in enumerate(types[:n]))
            return checked(linear, only, sequences=True, linear=True)

        return make

    for fn in fns:
        register(fn, make_for(t.cast(t.Callable[..., t.Any], fn)), numeric=True)
        _register_unknown(
            fn, make_for(t.cast(t.Callable[..., t.Any], fn), True), True, operand, linear=True
        )
        if operand == 0:
            inplace_forward.LINEAR[fn] = frozenset(added)  # (its ``out=`` form: ``f(dx, out=dz)``)


def _writes_out(types: tuple[T.Type, ...], kwnames: tuple[str, ...]) -> bool:
    """An ``out=`` that is an array (``out=None``, NumPy's ``_wrapfunc`` passes it: no write)."""
    if "out" not in kwnames:
        return False
    out = types[len(types) - len(kwnames) + kwnames.index("out")]
    return not (out == T.NONE or isinstance(out, T.Const) and out.value is None)


def _maybe_varied(
    i: int, types: tuple[T.Type, ...], kwnames: tuple[str, ...], added: t.Collection[int | str]
) -> bool:
    """Whether operand ``i`` of a linear function, not the one it is linear in, has a tangent
    the rule would drop: one of a known type, or an added term.  One of a type the build could
    not tell (``ndmin``, ``dtype`` or an axis computed inside NumPy's Python) is a constant
    there: the function is constant in it (an index, a shape: piecewise constant)."""
    n = len(types) - len(kwnames)
    if (i if i < n else kwnames[i - n]) in added:
        return True
    return not _untold(types[i])


def _untold(ty: T.Type) -> bool:
    """A type the build could not tell, or a tuple or list of such and of ints (a shape)."""
    if isinstance(ty, (T.Tuple, T.List)):
        items = ty.items if isinstance(ty, T.Tuple) else (ty.item,)
        return all(_untold(item) or isinstance(item, (T.Int, T.Bool)) for item in items)
    # (a tuple or list whose items the build could not tell: ``a.shape`` of an ``any``)
    return isinstance(ty, T.Any) or isinstance(ty, T.Object) and T.python_class(ty) in (tuple, list)


def _real_sequence(ty: T.Type, item: t.Callable[[T.Type], bool] = real_type) -> bool:
    """A list or tuple of real numbers or arrays (``item``: of those; a linear function's,
    complex too) (``np.array([x, y])``, ``np.stack(xs)``): its tangent is the same sequence
    of the items' tangents."""
    if isinstance(ty, T.List):
        return item(ty.item) or _real_sequence(ty.item, item)
    if isinstance(ty, T.Tuple):
        return all(item(i) or _real_sequence(i, item) for i in ty.items)
    return False


def real_operand(ty: T.Type) -> bool:
    """A real number or array, or a list or tuple of them: what NumPy makes a real array of
    (``np.var([a, b])``)."""
    return real_type(ty) or _real_sequence(ty)


def number_operand(ty: T.Type) -> bool:
    """The same, real or complex: what a (real-)linear function takes the tangent of (a
    sequence of items the build could not tell checked at run time)."""
    return number_type(ty) or _real_sequence(ty, number_type) or unknown(ty)


def register_linear_in(fns: t.Iterable[object], linear: tuple[int, ...], most: int) -> None:
    """``fn`` is linear in its operands ``linear`` together, and constant in the others (an
    index, an axis): ``np.append(a, v)`` joins ``a`` and ``v``, so its tangent is
    ``np.append(da, dv)``, zeros in place of a tangent that is missing.  At most ``most``
    positional operands, none of ``linear`` by keyword."""

    def make_for(fn: t.Callable[..., t.Any]) -> Maker:
        def make(
            types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
        ) -> Tangent | Emit | None:
            n = len(types) - len(kwnames)
            if n <= max(linear) or n > most or _writes_out(types, kwnames):
                return None
            if not all(number_operand(types[i]) for i in linear):
                return None
            if any(v for i, v in enumerate(varied) if i not in linear):
                return None

            if static_types(types):

                def emit(
                    b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
                ) -> Value:
                    if all(tangents[i] is None for i in linear):
                        return zero(b, z)
                    moved = [
                        item_tangent(b, a, tangents[i]) if i in linear else a
                        for i, a in enumerate(args)
                    ]
                    return b.call(fn, *moved, kwargs=kwargs, type=z.type)

                return Emit(emit)

            def joined(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
                if all(a[n + i] is None for i in linear):
                    return like(z, None)
                moved = [
                    (like(v, None) if a[n + i] is None else a[n + i]) if i in linear else v
                    for i, v in enumerate(a[:n])
                ]
                return like(z, fn(*moved, **kwargs))

            return checked(joined, types[:n], sequences=True)

        return make

    for fn in fns:
        register(fn, make_for(t.cast(t.Callable[..., t.Any], fn)), numeric=True)


def register_bilinear(
    fns: t.Iterable[object], most: int = 2, options: t.Collection[str] = ()
) -> None:
    """``fn(a, b)`` linear in each operand: ``fn(da, b) + fn(a, db)``.  With ``most`` above 2,
    the positional operands after ``b`` (up to ``most`` in all) and the keywords ``options``
    are constants passed as they are (``np.convolve(a, v, mode)``)."""

    def make_for(fn: t.Callable[..., t.Any], written: bool = False) -> Maker:
        def make(
            types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
        ) -> Tangent | Emit | None:
            n = len(types) - len(kwnames)
            if not set(kwnames) <= set(options) or not 2 <= n <= most:
                return None
            if not all(map(number_type, types[:2])) or any(varied[2:]):
                return None

            if static_types(types) or written:

                def emit(
                    b: Builder, z: Value, args: Values, tangents: Tangents, kwargs: Keywords
                ) -> Value:
                    (x, y), (dx, dy), rest = args[:2], tangents[:2], args[2:]
                    terms = [
                        b.call(fn, *pair, *rest, kwargs=kwargs, type=z.type)
                        for pair, d in (((dx, y), dx), ((x, dy), dy))
                        if d is not None
                    ]
                    if not terms:
                        return zero(b, z)
                    total = terms[0]
                    for term in terms[1:]:
                        total = b.call(operator.add, total, term, type=z.type)
                    return total

                return Emit(emit)

            def bilinear(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
                (x, y), rest, (dx, dy) = a[:2], a[2:n], a[n : n + 2]
                d = None if dx is None else fn(dx, y, *rest, **kwargs)
                if dy is not None:
                    e = fn(x, dy, *rest, **kwargs)
                    d = e if d is None else d + e
                return like(z, d)

            return checked(bilinear, types[:n], linear=True)

        return make

    for fn in fns:
        register(fn, make_for(t.cast(t.Callable[..., t.Any], fn)), numeric=True)
        _register_unknown(fn, make_for(t.cast(t.Callable[..., t.Any], fn), True), linear=True)







def register_multilinear(fns: t.Iterable[object], first: int, last: int | None = None) -> None:
    """``fn`` linear in each of its operands ``first`` to ``last`` (all from ``first``: None),
    the others constants (``einsum``'s subscripts, ``tensordot``'s axes): the sum over the
    varied operands of ``fn`` with that operand's tangent in its place."""

    def make_for(fn: t.Callable[..., t.Any]) -> Maker:
        def make(
            types: tuple[T.Type, ...], kwnames: tuple[str, ...], varied: tuple[bool, ...]
        ) -> Tangent | Emit | None:
            n = len(types) - len(kwnames)
            end = n if last is None else min(last + 1, n)
            linear = range(first, end)
            if "out" in kwnames or any(v for i, v in enumerate(varied) if i not in linear):
                return None
            if not all(number_type(types[i]) for i in linear):
                return None

            def tangent(z: t.Any, *a: t.Any, **kwargs: t.Any) -> t.Any:
                total = None
                for i in linear:
                    d = a[n + i]
                    if d is not None:
                        term = fn(*[d if j == i else a[j] for j in range(n)], **kwargs)
                        total = term if total is None else total + term
                return like(z, total)

            return checked(tangent, types)

        return make

    for fn in fns:
        register(fn, make_for(t.cast(t.Callable[..., t.Any], fn)), numeric=True)






#: Python's in-place operators: into an array they write (``gibbous.rules.inplace_forward``);
#: into a float they make a new value.
IN_PLACE = frozenset(inplace_forward.IN_PLACE_OF)


def not_an_array(x: object, name: str) -> None:
    """Refuses, at run time, an in-place operator on an array (a value of type ``Any``)."""
    if isinstance(x, np.ndarray):
        raise ForwardModeError(
            f"forward mode: {name} writes into an array here, whose type was not known when the "
            "rule was built (forward mode follows writes into arrays it can see as arrays: "
            "the tangents of the array's other names would miss this one)"
        )


runtime.register_object(not_an_array, "forward.not_an_array")

