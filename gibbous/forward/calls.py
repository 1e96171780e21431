"""The forward-mode transform's calls of Python code: a Python function's own forward program
with its parameters bound (``*args``, ``**kwargs``, defaults), a Python class's construction,
a closure's cells, ``f(*args, **kwargs)`` and callees known only at run time; and what the
transform asks of the build about calls (``Resolver``, ``Site``).

``Calls`` is the part of ``gibbous.forward.transform``'s transform that writes them: it holds the
primal and tangent maps the transform fills, and the helpers both parts read.
"""

from __future__ import annotations

import operator
import typing as t
from types import FunctionType

import attrs

from gibbous.ir import names, runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Call, Constant, Location, Operation, Value
from gibbous.infer.implementations import library_file, library_of
from gibbous.forward.activity import Default, bind_packed, bound, operands, tangentless
from gibbous.rules import frules
from gibbous.rules.call_adapters import Packed
from gibbous.library.python.closures import closure_box, immutable_contents
from gibbous.forward.frames import Steps
from gibbous.rules.emit import ForwardModeError, item_tangent
from gibbous.rules.public_names import callable_name


@attrs.frozen
class Site:
    """How a call with varied operands is differentiated: ``kind`` is ``"zero"`` (its result
    has no tangent), ``"tangent"`` (``what`` is the tangent function) or ``"derived"``
    (``what`` is the callee's forward program, called with the operands and the tangents of
    the varied ones) or ``"dynamic"`` (a callee known only at run time: ``what(callee,
    *operands, *tangents)``, None for an operand without one, resolves it then)."""

    kind: t.Literal["zero", "tangent", "derived", "dynamic"]
    what: object = None


class Resolver(t.Protocol):
    """What the transform asks of the build about calls (``gibbous.forward.programs.ProgramBuilder``)."""

    def resolve(self, op: Call, varied: tuple[bool, ...]) -> Site:
        """The call's ``Site`` (``varied[i]``: operand ``i`` has a tangent); raises
        ``ForwardModeError`` if the call has no forward rule."""

    def primitive_site(
        self,
        fn: object,
        types: tuple[T.Type, ...],
        kwnames: tuple[str, ...],
        varied: tuple[bool, ...],
        loc: Location | None,
    ) -> Site:
        """The same for a call the transform writes itself (``z * x`` of ``z *= x``)."""

    def writes(self, op: Call, varied: tuple[bool, ...]) -> frozenset[int]:
        """The operands the call may write into (``gibbous.forward.activity.Writes``)."""

    def derived_code(
        self, fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]
    ) -> FunctionType | None:
        """The Python function whose forward program calls of ``fn`` run, if any: a Python
        function without a registered rule, or the one a NumPy dispatcher without one calls."""

    def derived(
        self, fn: FunctionType, types: tuple[T.Type, ...], varied: tuple[bool, ...]
    ) -> Site:
        """The forward program of ``fn`` for its parameters' types (all of them bound)."""

    def construct(
        self, cls: type, types: tuple[T.Type, ...], varied: tuple[bool, ...], loc: object
    ) -> t.Callable[..., t.Any]:
        """``run(*args, *tangents of the varied ones) -> (obj, dobj)`` for ``cls(*args)``."""

    def steps(self) -> Steps:
        """How the programs step generators (``gibbous.forward.generators``)."""

    def dynamic_calls(self) -> t.Callable[..., t.Any]:
        """``calls(callee, *args, *tangents) -> (y, dy)``, a callee's forward rule found at
        run time (``gibbous.forward.dynamic.DynamicCalls``)."""

    def program_of(self) -> t.Callable[..., t.Any]:
        """``program_of(calls, callee, dcallee, head, kwnames, varied, *values) -> run``: a
        callee's compiled forward program found at run time, for a program reverse mode
        differentiates (``gibbous.forward.dynamic.program_of``)."""

    def star_program_of(self) -> t.Callable[..., t.Any]:
        """``star_program_of(calls, callee, dcallee, head, args, dargs[, kwargs, dkwargs])
        -> run``: the same for ``callee(*args, **kwargs)``, ``run([callee, dcallee,] args, dargs[,
        kwargs, dkwargs])``."""


def library_refusal(op: Call, code: FunctionType, error: Exception) -> ForwardModeError | None:
    """What a library's own Python (NumPy's, SciPy's: ``code``, which the user's call ``op``
    runs) needs that forward mode cannot differentiate, reported at the user's call, as the
    missing forward rule of the callable the user called; None for a call of other code."""
    library = library_of(code)
    loc = op.loc
    if library is None or not isinstance(loc, Location) or library_file(loc.file):
        return None
    fn = op.callee.value if isinstance(op.callee, Constant) else code
    types = [str(v.type) for v in op.args] + [f"{k}={v.type}" for k, v in op.kwargs.items()]
    first = str(error).split("\n", 1)[0]
    return ForwardModeError(
        f"forward mode: {callable_name(fn)}({', '.join(types)}) at {loc.file}:{loc.line}: no "
        f"forward rule; gibbous differentiates {library}'s own Python where no rule is "
        f"registered, and {callable_name(fn)}'s needs what it cannot differentiate yet:\n"
        f"    {first}"
    )


def where(op: Operation | None, fn_name: str) -> str:
    loc = None if op is None else op.loc
    return f"{loc.file}:{loc.line}" if isinstance(loc, Location) else f"in {fn_name}"


class Calls:
    """The transform's state, its helpers, and its calls of Python code (``jvp._Transform``
    sets the state up and writes everything else)."""

    f: t.Any  # (the typed function transformed)
    fn_name: str
    resolver: Resolver
    resolve: t.Callable[[Call, tuple[bool, ...]], Site]
    reversible: bool  # (a program reverse mode differentiates: a Hessian-vector product's)
    primal: dict[Value, Value]
    tangent: dict[Value, Value]
    varied: set[Value]  # (the values with a tangent)
    exposed: t.Collection[Value]  # (the values a write may reach)
    own_cells: list[Value]
    closure_fn: Value
    dclosure: Value

    def refuse(self, op: Operation | None, what: str) -> ForwardModeError:
        return ForwardModeError(
            f"forward mode cannot differentiate {what} ({where(op, self.fn_name)}, in "
            f"{self.fn_name}): this version of build_frule takes real and complex numbers and "
            "arrays through NumPy's functions, Python functions, closures and objects made of "
            "those, lists, tuples and writes into arrays; use build_rrule and "
            "value_and_pullback for the rest"
        )

    def p(self, v: Value) -> Value:
        if isinstance(v, Constant):
            return Constant(v.value)
        return self.primal[v]

    def d(self, b: Builder, v: Value) -> Value:
        """``v``'s tangent: its own, or zeros shaped as it (a value without one)."""
        hit = self.tangent.get(v)
        if hit is not None:
            return hit
        return frules.zero(b, self.p(v))

    def settle(self, b: Builder, op: Call) -> None:
        """(the transform's: the tangent of ``op``'s result aliased as the result is)"""
        raise NotImplementedError

    def derived_call(
        self, b: Builder, op: Call, fn: FunctionType, varied: tuple[bool, ...]
    ) -> None:
        """A call of a Python function: its own forward program, called with every parameter
        bound (keywords by name, defaults filled in) and the tangents of the varied ones."""
        r, given = op.result, operands(op)
        name = callable_name(fn)
        binding = bind_packed(fn, len(op.args), tuple(op.kwargs))
        if binding is None:
            raise self.refuse(op, f"this call of {name}, which Python would refuse")
        if r not in self.varied and not tangentless(r.type):
            raise self.refuse(op, f"{name}, whose result ({r.type}) depends on a float")
        types, full_varied = bound(binding, tuple(v.type for v in given), varied)
        try:
            site = self.resolver.derived(fn, types, full_varied)
        except ForwardModeError as e:
            refused = library_refusal(op, fn, e)
            if refused is None:
                raise
            raise refused from e
        values = [self.bound_value(b, w, given, ty) for w, ty in zip(binding, types)]
        tangents = [
            self.bound_tangent(b, w, given, ty)
            for w, ty, v in zip(binding, types, full_varied)
            if v
        ]
        made = b.call(site.what, *values, *tangents, type=T.ANY)
        if self.unpair(b, r, made):
            self.settle(b, op)

    def unpair(self, b: Builder, r: Value, made: Value, *, always: bool = False) -> bool:
        """``r`` and its tangent from the (value, tangent) pair a forward program returns; the
        tangent only where ``r`` is varied, or ``always`` (an object's, whose type is unknown
        here).  Whether ``r`` got a tangent."""
        self.primal[r] = b.call(operator.getitem, made, 0, type=r.type, name=r.name)
        if not (always or r in self.varied):
            return False
        self.tangent[r] = b.call(operator.getitem, made, 1, type=T.ANY if always else r.type)
        return True

    def bound_value(
        self, b: Builder, w: int | Default | Packed, given: t.Sequence[Value], ty: T.Type
    ) -> Value:
        """A parameter's value in a bound call: an operand, a default, or the tuple (dict) of
        the operands a ``*args`` (``**kwargs``) is made of."""
        if isinstance(w, Default):
            return Constant(w.value)
        if isinstance(w, int):
            return self.p(given[w])
        items = [self.p(given[i]) for i in w.indices]
        if w.names is None:
            return b.call(runtime.make_tuple, *items, type=ty)
        pairs = [x for k, v in zip(w.names, items) for x in (Constant(k), v)]
        return b.call(runtime.make_dict, *pairs, type=ty)

    def bound_tangent(
        self, b: Builder, w: int | Default | Packed, given: t.Sequence[Value], ty: T.Type
    ) -> Value:
        """The tangent of a varied parameter in a bound call (a ``*args``'s: the tuple of its
        operands' tangents, zeros for one without)."""
        if isinstance(w, int):
            return self.tangent[given[w]]
        assert isinstance(w, Packed)
        items = [item_tangent(b, self.p(given[i]), self.tangent.get(given[i])) for i in w.indices]
        if w.names is None:
            return b.call(runtime.make_tuple, *items, type=ty)
        pairs = [x for k, d in zip(w.names, items) for x in (Constant(k), d)]
        return b.call(runtime.make_dict, *pairs, type=ty)

    def construct(self, b: Builder, op: Call, cls: type, varied: tuple[bool, ...]) -> None:
        """``cls(*args)`` of a Python class: the object and its tangent, ``__init__``'s forward
        program run on both (``gibbous.forward.programs.Construct``)."""
        r = op.result
        if op.kwargs:
            raise self.refuse(op, f"{callable_name(cls)}(...) with keyword arguments")
        if self.reversible:  # (``Construct`` has no reverse rule)
            raise self.refuse(op, f"{callable_name(cls)}(...) in a Hessian-vector product")
        site = self.resolver.construct(cls, tuple(a.type for a in op.args), varied, op.loc)
        tangents = [self.tangent[a] for a, v in zip(op.args, varied) if v]
        made = b.call(site, *(self.p(a) for a in op.args), *tangents, type=T.ANY)
        self.unpair(b, r, made, always=True)

    def closure_cell(self, b: Builder, op: Call, args: list[Value]) -> None:
        """``closure_cell(fn, i)``: of the function itself, with boxes passed in, box ``i``
        (``closure_box`` where a write reaches it: a cell made outside has none); of a function
        made outside the differentiated code, a constant, which no write may reach."""
        r = op.result
        if r in self.own_cells:  # (of the function called, not of the one built for)
            args = [self.closure_fn, *args[1:]]
        self.primal[r] = b.call(self.p(op.callee), *args, type=r.type, name=r.name)
        if r in self.own_cells:
            # (``closure_box`` checks a cell made outside is not written; reverse mode, which
            # has no rule for it, reads the tuple: a tangent cell or None, never written then)
            written = r in self.exposed and not self.reversible
            get = closure_box if written else operator.getitem
            self.tangent[r] = b.call(get, self.dclosure, args[1], type=T.ANY)
            return
        if r in self.exposed:
            fn = op.operands[1]
            set_here = any(
                isinstance(u, Call) and isinstance(u.callee, Constant)
                and u.callee.value is runtime.cell_set
                for u in r.users
            )  # fmt: skip
            if set_here or not isinstance(fn, Constant):
                raise self.refuse(
                    op,
                    "a write into a variable of an enclosing function (nonlocal) of a function "
                    "made outside the differentiated code",
                )
            # (not set here, but what it holds may be reached by a write the build could not
            # rule out: immutable at run time, no write reaches it; else refused there)
            name = Constant(callable_name(fn.value))
            b.call(immutable_contents, self.primal[r], name, args[1], type=T.NONE)
        self.varied.discard(r)

    def star_call(self, b: Builder, op: Call, varied: tuple[bool, ...]) -> None:
        """``call_ex(f, args[, kwargs])``, ``f(*args, **kwargs)``: found at run time, when the
        arguments are known (``DynamicCalls.star``), the tangent of ``args`` unpacked beside
        them; the keywords' values may not have one."""
        r = op.result
        if self.reversible:  # (``star`` has no reverse rule: a binder program, called)
            self.star_program(b, op)
            return
        star = self.resolver.dynamic_calls().star  # type: ignore[attr-defined]
        names.printable(star, "forward.dynamic_calls.star")
        pairs = [
            x for v in op.args[:3]
            for x in (self.p(v), self.tangent[v] if v in self.varied else Constant(None))
        ]  # fmt: skip
        made = b.call(star, *pairs, type=T.ANY)
        self.unpair(b, r, made)

    def in_place_of_any(self, b: Builder, op: Call, fn: object, varied: tuple[bool, ...]) -> None:
        """``x += y`` with ``x`` of a type the build could not tell: decided at run time
        (``DynamicCalls.in_place``: a new number, or a write into an array and its tangent)."""
        x, y = op.args
        in_place = self.resolver.dynamic_calls().in_place  # type: ignore[attr-defined]
        names.printable(in_place, "forward.dynamic_calls.in_place")
        dy = self.tangent[y] if varied[1] else Constant(None)
        made = b.call(in_place, Constant(fn), self.p(x), self.p(y), self.tangent[x], dy, type=T.ANY)
        self.unpair(b, op.result, made, always=True)

    def star_program(self, b: Builder, op: Call) -> None:
        """``f(*args, **kwargs)`` in a program reverse mode differentiates: ``run =
        star_program_of(...)`` (no derivative), an IR binder that unpacks ``args`` and calls
        ``f``'s program, then ``run(...)``, which reverse mode derives from its IR."""
        f, args = op.args[0], op.args[1]
        kwargs = op.args[2] if len(op.args) > 2 else None
        closure = f in self.varied
        dcallee = self.tangent[f] if closure else Constant(None)
        given = [self.p(args), self.tangent.get(args, Constant(None))]
        if kwargs is not None:
            given += [self.p(kwargs), self.tangent.get(kwargs, Constant(None))]
        calls = Constant(self.resolver.dynamic_calls())
        run = b.call(
            self.resolver.star_program_of(), calls, self.p(f), dcallee, Constant(closure),
            *given, type=T.ANY,
        )  # fmt: skip
        head = [self.p(f), dcallee] if closure else []
        self.unpair(b, op.result, b.call(run, *head, *given, type=T.ANY))

    def dynamic(
        self, b: Builder, op: Call, callee: Value, args: list[Value], varied: tuple[bool, ...]
    ) -> None:
        """A callee known only at run time: the resolver's handler finds its forward rule or
        program then, and returns the pair.  A callee with a tangent (a closure made in the
        differentiated code) passes its cells' boxes along."""
        r = op.result
        if r not in self.varied and not tangentless(r.type):
            raise self.refuse(op, f"a call whose result ({r.type}) depends on a float")
        if self.reversible:  # (``DynamicCalls`` has no reverse rule: its program is called)
            self.dynamic_program(b, op, callee, args, varied)
            return
        site = self.resolve(op, varied)
        tangents = [self.tangent[a] if v else Constant(None) for a, v in zip(op.args, varied)]
        kwargs = {k: self.p(v) for k, v in op.kwargs.items()}
        if any(varied[len(op.args) :]):  # (keywords with tangents: named, after the rest)
            named = site.what.named  # type: ignore[attr-defined]
            names.printable(named, "forward.dynamic_calls.named")
            dcallee = self.tangent[op.callee] if op.callee in self.varied else Constant(None)
            dkw = [self.tangent.get(v, Constant(None)) for v in op.kwargs.values()]
            made = b.call(
                named, callee, dcallee, Constant(tuple(op.kwargs)), *args, *tangents,
                *kwargs.values(), *dkw, type=T.ANY,
            )  # fmt: skip
        elif op.callee in self.varied:
            dcallee = self.tangent[op.callee]
            with_tangent = site.what.with_tangent  # type: ignore[attr-defined]
            names.printable(with_tangent, "forward.dynamic_calls.with_tangent")
            made = b.call(with_tangent, callee, dcallee, *args, *tangents, kwargs=kwargs, type=T.ANY)
        else:
            made = b.call(site.what, callee, *args, *tangents, kwargs=kwargs, type=T.ANY)
        self.unpair(b, r, made)

    def dynamic_program(
        self, b: Builder, op: Call, callee: Value, args: list[Value], varied: tuple[bool, ...]
    ) -> None:
        """The same in a program reverse mode differentiates: the callee's compiled forward
        program, found at run time (``program_of``, which has no derivative), called as a
        value, so that reverse mode derives its rule from the program's IR when it meets it."""
        r = op.result
        closure = op.callee in self.varied  # (a closure made here: its cells' tangents first)
        dcallee = self.tangent[op.callee] if closure else Constant(None)
        values = [*args, *(self.p(v) for v in op.kwargs.values())]
        calls = Constant(self.resolver.dynamic_calls())
        kwnames, flags = Constant(tuple(op.kwargs)), Constant(varied)
        run = b.call(
            self.resolver.program_of(), calls, callee, dcallee, Constant(closure), kwnames, flags,
            *values, type=T.ANY,
        )  # fmt: skip
        tangents = [self.tangent[a] for a, v in zip(operands(op), varied) if v]
        head = [callee, dcallee] if closure else []
        made = b.call(run, *head, *values, *tangents, type=T.ANY)
        self.unpair(b, r, made)

