"""Forward mode: ``build_frule`` and ``jvp``.

``frule = build_frule(f, *args)`` reads ``f``'s typed IR (the reverse mode's, from the same
session machinery), applies the forward-mode transform (``gibbous.passes.jvp``) and compiles
the result with the NumPy backend; calls of Python functions inside get forward programs of
their own, built once per argument types (recursion through a program still being built
reaches it when called).  ``jvp(frule, f, args, tangents)`` returns ``(y, dy)``: ``dy`` is the
derivative of ``f`` at ``args`` along ``tangents``, shaped as ``y``.

Every float or float64-array argument has a tangent (an int has none: pass None).  The
callable's own captured values are constants here: the tangent is along the arguments.
"""

from __future__ import annotations

import types as pytypes
import typing as t

import numpy as np

from gibbous.api import StaleRuleError, rebound_global
from gibbous.backends.numpy.codegen import compile_function
from gibbous.ir import names, runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Call, Constant, Function, Location
from gibbous.passes.jvp import ForwardModeError, Site, jvp_transform, pair
from gibbous.passes.jvp_generators import frame_maker, generator_function
from gibbous.frontend.errors import UnsupportedConstructError
from gibbous.passes.jvp_activity import (
    Default,
    analyse,
    bind_call,
    bind_packed,
    bound,
    operands,
    tangent_carrying,
)
from gibbous.rules import forward as FR
from gibbous.rules import forward_writes as FW
from gibbous.rules.forward_cells import ClosureTangent
from gibbous.rules.forward_generators import Steps
from gibbous.rules.generators import FRAME
from gibbous.rules.forward_ir import ObjectTangent, user_class
from gibbous.rules.tangent_classes import instance_fields
from gibbous.rules.public_names import (
    callable_name,
    entry_point,
    entry_point_name,
    higher_order_hint,
)
from gibbous.rules.call_adapters import Packed
from gibbous.rules.derived import acceptor, ir_parameters
from gibbous.rules.dynamic_calls import function_key
from gibbous.rules.registry import Context, DefaultContext, MissingRuleError, lookup_rule
from gibbous.rules.tangents import NoTangent
from gibbous.session import Session, derivable

__all__ = ["ForwardModeError", "ForwardRule", "build_frule", "jvp"]


@entry_point
class ForwardRule:
    """A forward rule of ``fn`` for arguments of ``arg_types``: ``rule(*args, *tangents)``
    with one tangent per varied argument returns ``(y, dy)``."""

    def __init__(
        self,
        fn: object,
        arg_types: tuple[T.Type, ...],
        run: t.Callable[..., t.Any],
        frozen: t.Sequence[tuple[dict[str, object], str, object]] = (),
        written: frozenset[int] = frozenset(),
    ) -> None:
        self.fn = fn
        # the arguments the function writes into: their tangents are written too, so ``jvp``
        # hands the program copies of the caller's
        self.written = written
        self.arg_types = arg_types
        # The module globals the programs froze into their code (the session's list: programs
        # built later, at run time, add theirs), checked by ``jvp`` as ``value_and_gradient``
        # checks a reverse rule's.
        self.frozen = frozen
        self.varied = tuple(map(tangent_carrying, arg_types))
        self.accepts = tuple(map(acceptor, arg_types))
        self.run = run

    def __call__(self, *args: t.Any) -> tuple[t.Any, t.Any]:
        return t.cast(tuple[t.Any, t.Any], self.run(*args))

    def __repr__(self) -> str:
        types = ", ".join(map(str, self.arg_types))
        return f"<forward rule of {callable_name(self.fn)}({types})>"


@entry_point
def build_frule(
    f: t.Callable[..., object], *args: object, ctx: Context | None = None
) -> ForwardRule:
    """The forward rule of ``f`` for arguments of the types of ``args`` (positional: keyword
    arguments and defaults are for a later version)."""
    types = tuple(T.typeof(a) for a in args)
    builder = ProgramBuilder(Session(ctx or DefaultContext, False, None))
    varied = tuple(map(tangent_carrying, types))
    tangent = builder.primitive(f, types, (), varied, None)
    if isinstance(tangent, FR.Emit):  # written out: the call and its tangent, compiled
        result_type = T.typeof(f(*args))
        return ForwardRule(f, types, primitive_program(f, types, (), varied, tangent, result_type))
    if tangent is not None:
        return ForwardRule(f, types, primitive_run(f, tangent, types, (), varied))
    if not (isinstance(f, pytypes.FunctionType) and derivable_function(f)):
        raise ForwardModeError(
            f"build_frule: {callable_name(f)} has no forward rule and is not a Python function "
            "whose forward program could be derived; this version takes Python functions and "
            "NumPy's elementwise functions, reductions and products"
        )
    binding = bind_call(f, len(args), ())
    if binding is None:
        code = f.__code__
        raise ForwardModeError(
            f"build_frule({callable_name(f)}, ...): pass one positional value per parameter "
            f"({code.co_argcount}; those with defaults may be left out); *args, **kwargs and "
            "keyword-only parameters are not taken by this version"
        )
    full_types, full_varied = bound(binding, types, varied)
    run = builder.program(f, full_types, full_varied)
    written = builder.written_args(f, full_types, full_varied)
    if len(full_types) > len(types):  # defaults: constants after the arguments given
        run = _with_defaults(run, len(types), [t.cast(Default, d).value for d in binding[len(types):]])
    return ForwardRule(f, types, run, builder.session.frozen, written)


@entry_point
def jvp(
    rule: ForwardRule,
    f: t.Callable[..., object],
    args: t.Sequence[t.Any],
    tangents: t.Sequence[t.Any],
) -> tuple[t.Any, t.Any]:
    """``(f(*args), J(args) @ tangents)``: ``tangents`` has ``args``' structure (a float for a
    float, an array of its shape for an array, None or ``NoTangent()`` for an int)."""
    if f is not rule.fn:
        raise TypeError(f"jvp: this rule is {rule!r}, not a rule of {callable_name(f)}")
    if rule.frozen:
        stale = rebound_global(rule.frozen, f)
        if stale is not None:
            raise StaleRuleError(f"{stale}; build the rule again")
    args, tangents = tuple(args), tuple(tangents)
    if len(args) != len(rule.arg_types) or len(tangents) != len(args):
        raise TypeError(
            f"jvp: {rule!r} takes {len(rule.arg_types)} arguments and as many tangents; "
            f"{len(args)} arguments and {len(tangents)} tangents given"
        )
    given = []
    for i, (ok, a, dx, v) in enumerate(zip(rule.accepts, args, tangents, rule.varied)):
        if not ok(a):
            raise TypeError(
                f"jvp: argument {i} is {T.typeof(a)}, but {rule!r} was built for "
                f"{rule.arg_types[i]}: build a rule for these types"
            )
        if v:
            kind = type(dx)
            if (kind is float and type(a) is float) or (
                kind is np.ndarray
                and type(a) is np.ndarray
                and dx.dtype == np.float64
                and dx.shape == a.shape
            ):
                given.append(dx)  # (the common cases, checked quickly)
            else:
                given.append(_checked_tangent(i, a, dx))
        elif dx is not None and not isinstance(dx, NoTangent):
            raise TypeError(f"jvp: argument {i} ({rule.arg_types[i]}) has no tangent; pass None")
    if rule.written:
        given = _apart(rule, args, given)
    y, dy = rule.run(*args, *given)
    if dy is None:
        dy = FR.like(y, None) if _is_real(y) else NoTangent()
    return y, dy


def _apart(rule: ForwardRule, args: tuple[t.Any, ...], given: list[t.Any]) -> list[t.Any]:
    """The tangents with those of written arguments copied (arrays in a written list or tuple
    too): the program writes into them as the function writes into the arguments, and the
    caller's tangents stay the caller's.  A written argument sharing memory with another (an
    array, or a list, held by both) cannot be followed (its tangent would have to share memory
    with the other's as well): refused."""
    out, k = [], 0
    for i, v in enumerate(rule.varied):
        if not v:
            continue
        dx = given[k]
        k += 1
        if i in rule.written:
            mine = list(_held(args[i]))
            for j, other in enumerate(args):
                if j != i and any(_overlap(a, b) for a in mine for b in _held(other)):
                    raise ValueError(
                        f"jvp: {callable_name(rule.fn)} writes into argument {i}, which shares "
                        f"memory with argument {j}; pass a copy of one of them"
                    )
            dx = _copied(dx)
        out.append(dx)
    return out


def _held(v: t.Any) -> t.Iterator[t.Any]:
    """``v`` and the arrays, lists and dicts it holds (a write may reach each)."""
    if isinstance(v, (np.ndarray, list, dict)):
        yield v
    if isinstance(v, (list, tuple)):
        for item in v:
            yield from _held(item)
    elif isinstance(v, dict) or user_class(type(v)):  # (a dict's values, an object's fields)
        for item in (v if isinstance(v, dict) else instance_fields(v)).values():
            yield from _held(item)


def _overlap(a: t.Any, b: t.Any) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.may_share_memory(a, b))
    return a is b


def _copied(d: t.Any) -> t.Any:
    """A tangent with every array in it (and every list, dict or object's tangent holding
    one) new."""
    if isinstance(d, np.ndarray):
        return np.array(d, dtype=np.float64)
    if isinstance(d, list):
        return [_copied(i) for i in d]
    if isinstance(d, tuple):
        return tuple(_copied(i) for i in d)
    if isinstance(d, dict):
        return {k: _copied(v) for k, v in d.items()}
    if isinstance(d, ObjectTangent):
        return ObjectTangent(_copied(d.fields))
    return d


def _with_defaults(
    program: t.Callable[..., t.Any], n: int, defaults: list[object]
) -> t.Callable[..., t.Any]:
    """``program`` taking the first ``n`` parameters and the tangents; the rest are these."""

    def run(*given: t.Any) -> t.Any:
        return program(*given[:n], *defaults, *given[n:])

    return run


def _is_real(y: object) -> bool:
    return isinstance(y, (float, int, np.floating, np.integer)) or (
        isinstance(y, np.ndarray) and y.dtype.kind in "biuf"
    )


def _checked_tangent(i: int | str, a: t.Any, dx: t.Any) -> t.Any:
    if dx is None or isinstance(dx, NoTangent):  # (no tangent: zeros, of the value's shape)
        return FR.like(a, None)
    if isinstance(a, (tuple, list)):  # (the items' tangents: None or 0.0 for an int's)
        kind = type(a)
        if not isinstance(dx, (tuple, list)) or len(dx) != len(a):
            raise TypeError(
                f"jvp: the tangent of argument {i} must be a {kind.__name__} of {len(a)} items, "
                f"one per item of the argument (None for an item without one); "
                f"{type(dx).__name__} given"
            )
        items = [
            _checked_tangent(f"{i}[{k}]", item, d) if tangent_carrying(T.typeof(item)) else None
            for k, (item, d) in enumerate(zip(a, dx))
        ]
        build: t.Any = kind
        return build(*items) if hasattr(kind, "_fields") else build(items)  # (a NamedTuple's)
    if isinstance(a, dict):  # (its values' tangents by key, in its order; missing: zeros)
        if not isinstance(dx, dict) or not set(dx) <= set(a):
            raise TypeError(
                f"jvp: the tangent of argument {i} must be a dict of tangents of its values, "
                f"by key (a key it leaves out: zeros); {type(dx).__name__} given"
            )
        return {
            k: _checked_tangent(f"{i}[{k!r}]", v, dx.get(k))
            if tangent_carrying(T.typeof(v))
            else None
            for k, v in a.items()
        }
    if user_class(type(a)):  # (its attributes' tangents, by name)
        if isinstance(dx, ObjectTangent):
            return dx
        if isinstance(dx, dict) and all(isinstance(k, str) for k in dx):
            return ObjectTangent(dict(dx))
        raise TypeError(
            f"jvp: the tangent of argument {i} ({type(a).__name__}) must be a dict of its "
            f"attributes' tangents by name (or None); {type(dx).__name__} given"
        )
    if isinstance(a, np.ndarray):
        if not isinstance(dx, np.ndarray) or dx.shape != a.shape or dx.dtype.kind not in "biuf":
            what = (
                f"an array of shape {dx.shape} and dtype {dx.dtype}"
                if isinstance(dx, np.ndarray)
                else type(dx).__name__
            )
            raise TypeError(
                f"jvp: the tangent of argument {i} must be a real array of shape {a.shape}; "
                f"{what} given"
            )
        return dx if dx.dtype == np.float64 else dx.astype(np.float64)
    real = isinstance(dx, (int, float, np.integer, np.floating))
    if isinstance(dx, (bool, np.bool_)) or not real:
        raise TypeError(
            f"jvp: the tangent of argument {i} (a float) must be a real number; "
            f"{type(dx).__name__} given"
        )
    return float(dx)


def primitive_run(
    f: object,
    tangent: FR.Tangent,
    types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    varied: tuple[bool, ...],
) -> t.Callable[..., t.Any]:
    """``f(*args, **kwargs)`` and its tangent function's tangent, called as
    ``primitive_program``'s: ``run(*args, *kwarg_values, *tangents_of_varied) -> (y, dy)``."""
    fn = t.cast(t.Callable[..., t.Any], f)
    n, total = len(types) - len(kwnames), len(types)

    def run(*given: t.Any) -> tuple[t.Any, t.Any]:
        named = dict(zip(kwnames, given[n:total]))
        rest = iter(given[total:])
        tangents = [next(rest) if v else None for v in varied[:n]]
        z = fn(*given[:n], **named)
        return z, tangent(z, *given[:n], *tangents, **named)

    return run


def derivable_function(fn: pytypes.FunctionType) -> bool:
    return bool(derivable(fn))


def primitive_program(
    f: object,
    types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    varied: tuple[bool, ...],
    emit: FR.Emit,
    result_type: T.Type,
) -> t.Callable[..., t.Any]:
    """``f(*args, **kwargs)`` and its tangent as a compiled program (a library function at
    the entry): ``run(*args, *kwarg_values, *tangents_of_varied) -> (y, dy)``."""
    params = [(f"x{i}", ty) for i, ty in enumerate(types)]
    params += [(f"dx{i}", ty) for i, (ty, v) in enumerate(zip(types, varied)) if v]
    ir = Function(f"{getattr(f, '__name__', 'f')}_jvp", params)
    b = Builder(ir)
    n = len(types) - len(kwnames)
    values = ir.args[: len(types)]
    rest = iter(ir.args[len(types) :])
    tangents = [next(rest) if v else None for v in varied]
    kwargs = dict(zip(kwnames, values[n:]))
    z = b.call(f, *values[:n], kwargs=kwargs, type=result_type)
    b.ret(pair(b, z, emit.fn(b, z, values[:n], tangents[:n] + tangents[n:], kwargs)))
    return compile_function(ir)


class _Later:
    """A forward program still being built (recursion): found when first called."""

    __slots__ = ("builder", "key", "fn")

    def __init__(self, builder: ProgramBuilder, key: tuple[object, ...]) -> None:
        self.builder, self.key = builder, key
        self.fn: t.Callable[..., t.Any] | None = None

    def __call__(self, *args: t.Any) -> t.Any:
        fn = self.fn
        if fn is None:
            fn = self.fn = self.builder.done[self.key]
        return fn(*args)


class ProgramBuilder:
    """The forward programs of one ``build_frule``, by function, argument types and varied
    arguments."""

    def __init__(self, session: Session, reversible: bool = False) -> None:
        self.session = session
        self.reversible = reversible  # (programs reverse mode differentiates: hvp's)
        self.done: dict[tuple[object, ...], t.Callable[..., t.Any]] = {}
        self.building: set[tuple[object, ...]] = set()
        self.dynamic: DynamicCalls | None = None
        self._steps: Steps | None = None
        # closures whose IR reads their function otherwise than through its cells: a program
        # each (``program``)
        self.unshared: set[tuple[object, ...]] = set()
        # which arguments each function's program may write into (by key as ``done``); None
        # while being found (recursion: every argument may be)
        self.written: dict[tuple[object, ...], frozenset[int] | None] = {}

    def program(
        self,
        fn: Programmed,
        types: tuple[T.Type, ...],
        varied: tuple[bool, ...],
        closure: bool = False,
    ) -> t.Callable[..., t.Any]:
        """``fn``'s forward program; with ``closure``, one that takes the boxes of ``fn``'s
        cells first (``gibbous.rules.forward_cells``).  ``fn`` may be a generator's resume
        function or a generator expression's (``gibbous.ir.runtime``): their IR reads the
        cells of the Python function they wrap.

        A closure's program reads the cells of the function it is given, so functions made
        anew of one code (a closure made on every call) share it, keyed by ``function_key``:
        one program, not one per function made (each compiled, and kept)."""
        shared = function_key(fn) if closure else None
        if shared is not None and shared in self.unshared:
            shared = None
        key: tuple[object, ...] = (fn, types, varied, closure) if shared is None else (
            shared, types, varied
        )
        hit = self.done.get(key)
        if hit is not None:
            return hit
        if key in self.building:
            return _Later(self, key)
        self.building.add(key)
        try:
            typed = self.typed(fn, types)
            inner = _wrapped(fn)
            if shared is not None and not _reads_itself_through_cells(typed, inner):
                self.unshared.add(shared)  # (it reads the function otherwise too: one each)
                self.building.discard(key)
                return self.program(fn, types, varied, closure)
            self.session.freeze(inner)  # (the globals the frontend froze into the IR)
            name = callable_name(inner)
            ir = jvp_transform(
                typed, varied, self, name, reversible=self.reversible,
                closure_of=inner if closure else None,
            )  # fmt: skip
            made = self.done[key] = compile_function(ir)
        finally:
            self.building.discard(key)
        return made

    def typed(self, fn: Programmed, types: tuple[T.Type, ...]) -> Function:
        """``fn``'s typed IR for these argument types; what the frontend cannot read is a
        ``ForwardModeError`` naming the function."""
        name = callable_name(_wrapped(fn))
        if isinstance(fn, pytypes.FunctionType) and fn.__code__.co_flags & _GENERATOR_FLAGS:
            raise ForwardModeError(
                f"forward mode: {name} is a generator function (or async), whose calls make "
                "a generator: it has no forward program of its own"
            )
        try:
            return self.session.primal_ir(fn, types)
        except ForwardModeError:
            raise
        except (TypeError, UnsupportedConstructError) as e:
            first = str(e).split("\n", 1)[0]
            raise ForwardModeError(f"forward mode: {name}: {first}") from e

    def steps(self) -> Steps:
        """How the forward programs of this build step generators."""
        if self._steps is None:
            self._steps = Steps(self.resume_program)
        return self._steps

    def dynamic_calls(self) -> DynamicCalls:
        """The forward rules of callees found at run time, for this build."""
        if self.dynamic is None:
            self.dynamic = names.printable(DynamicCalls(self), "forward.dynamic_calls")
        return self.dynamic

    def resume_program(self, fn: pytypes.FunctionType, closure: bool) -> t.Callable[..., t.Any]:
        """The forward program of generator function ``fn``'s resume function: ``run([fn, boxes,]
        frame, dframe) -> (y, dy)`` (``gibbous.rules.forward_generators``)."""
        return self.program(runtime.GeneratorResume(fn), (FRAME,), (True,), closure)

    def generator_writes(self, fn: pytypes.FunctionType, types: tuple[T.Type, ...]) -> frozenset[int]:
        """The operands of a call of generator function ``fn`` its steps may write into: all
        that may be arrays if its resume function writes into anything its frame holds (the
        frame does not say which argument a value came from)."""
        if not self.written_args(runtime.GeneratorResume(fn), (FRAME,), (True,)):
            return frozenset()
        return frozenset(i for i, ty in enumerate(types) if not _no_memory(ty))

    def primitive(
        self,
        fn: object,
        types: tuple[T.Type, ...],
        kwnames: tuple[str, ...],
        varied: tuple[bool, ...],
        loc: Location | None,
    ) -> FR.Tangent | FR.Emit | None:
        maker = FR.forward_maker(fn)
        return None if maker is None else maker(types, kwnames, varied)

    def resolve(self, op: Call, varied: tuple[bool, ...]) -> Site:
        if not isinstance(op.callee, Constant):
            return Site("dynamic", self.dynamic_calls())
        types = tuple(v.type for v in operands(op))
        return self.primitive_site(op.callee.value, types, tuple(op.kwargs), varied, op.loc)

    def primitive_site(
        self,
        fn: object,
        types: tuple[T.Type, ...],
        kwnames: tuple[str, ...],
        varied: tuple[bool, ...],
        loc: Location | None,
    ) -> Site:
        entry = entry_point_name(fn)
        if entry is not None:
            at = f" at {loc.file}:{loc.line}" if isinstance(loc, Location) else ""
            raise ForwardModeError(f"forward mode: a call of {entry}{at}: {higher_order_hint()}")
        try:
            registration = lookup_rule(self.session.ctx, fn, types, kwnames, loc=loc)
        except (MissingRuleError, TypeError):
            registration = None
        if registration is not None and registration.kind == "zero_derivative":
            return Site("zero")
        tangent = self.primitive(fn, types, kwnames, varied, loc)
        if tangent is not None:
            shown = f"forward.tangent<{callable_name(fn)}>"  # (for the IR's text)
            return Site("tangent", names.printable(tangent, shown))
        if registration is None and self.derives(fn, types, kwnames):
            if kwnames:
                raise _missing(fn, types, kwnames, loc, "keyword arguments of a Python function")
            n = len(types)
            fn = t.cast(pytypes.FunctionType, fn)
            return Site("derived", self.program(fn, types[:n], varied[:n]))
        raise _missing(fn, types, kwnames, loc, "no forward rule")

    def derives(self, fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]) -> bool:
        """Whether calls of ``fn`` get a forward program of its own (a Python function without
        a registered rule)."""
        if not (isinstance(fn, pytypes.FunctionType) and derivable_function(fn)):
            return False
        try:
            return lookup_rule(self.session.ctx, fn, types, kwnames) is None
        except (MissingRuleError, TypeError):
            return True

    def writes(self, op: Call, varied: tuple[bool, ...]) -> frozenset[int]:
        """The operands ``op`` may write into: a primitive's by ``forward_writes``; a Python
        function's from its own IR, for these varied arguments."""
        if not isinstance(op.callee, Constant):
            return frozenset()  # (a callee found at run time is refused there if it writes)
        fn = op.callee.value
        types = tuple(v.type for v in operands(op))
        kwnames = tuple(op.kwargs)
        if generator_function(fn):
            return self.generator_writes(fn, types)
        if not self.derives(fn, types, kwnames):
            return FW.written_operands(fn, types, kwnames)
        fn = t.cast(pytypes.FunctionType, fn)
        binding = bind_packed(fn, len(op.args), kwnames)
        if binding is None:  # (refused where the call is made)
            return frozenset()
        full_types, full_varied = bound(binding, types, varied)
        written = self.written_args(fn, full_types, full_varied)
        out: set[int] = set()
        for i in written:
            where = binding[i]
            if isinstance(where, Packed):  # (an item of ``*args`` or ``**kwargs``)
                out.update(where.indices)
                continue
            if isinstance(where, Default):
                loc = op.loc
                at = f" at {loc.file}:{loc.line}" if isinstance(loc, Location) else ""
                raise ForwardModeError(
                    f"forward mode: {callable_name(fn)}{at} writes into the default value of "
                    f"its parameter {i}, an array shared by every call: pass the array"
                )
            out.add(where)
        return frozenset(out)

    def derived(
        self,
        fn: pytypes.FunctionType,
        types: tuple[T.Type, ...],
        varied: tuple[bool, ...],
    ) -> Site:
        """The forward program of a Python function, for all its parameters' types."""
        return Site("derived", self.program(fn, types, varied))

    def construct(
        self, cls: type, types: tuple[T.Type, ...], varied: tuple[bool, ...], loc: object
    ) -> Construct:
        """``cls(*args)`` of a Python class: ``object.__new__``, then ``__init__``'s forward
        program on the object and its tangent."""
        name = callable_name(cls)
        at = f" at {loc.file}:{loc.line}" if isinstance(loc, Location) else ""
        if getattr(cls, "__new__") is not object.__new__:
            raise ForwardModeError(f"forward mode: {name}{at} has a __new__ of its own")
        init = getattr(cls, "__init__")
        if init is object.__init__:
            if types:
                raise ForwardModeError(f"forward mode: {name}{at} takes no arguments")
            return Construct(cls, None)
        if not (isinstance(init, pytypes.FunctionType) and derivable_function(init)):
            raise ForwardModeError(f"forward mode: {name}{at}: its __init__ is not Python code")
        binding = bind_call(init, 1 + len(types), ())
        if binding is None:
            raise ForwardModeError(
                f"forward mode: {name}(...){at}: an __init__ with *args, **kwargs or "
                "keyword-only parameters"
            )
        full_types, full_varied = bound(binding, (T.Object(cls), *types), (True, *varied))
        if self.written_args(init, full_types, full_varied) - {0}:
            raise ForwardModeError(
                f"forward mode: {name}.__init__{at} writes into an argument other than the object"
            )
        program = self.program(init, full_types, full_varied)
        defaults = tuple(w.value for w in binding[1 + len(types) :] if isinstance(w, Default))
        made = Construct(cls, program, len(types), defaults)
        return names.printable(made, f"forward.construct<{name}>")

    def written_args(
        self, fn: Programmed, types: tuple[T.Type, ...], varied: tuple[bool, ...]
    ) -> frozenset[int]:
        """The arguments ``fn``'s program for these types may write into."""
        key = (function_key(fn) or fn, types, varied)  # (functions made anew of one code: one)
        if key in self.written:
            known = self.written[key]
            if known is None:  # (recursion: every array argument may be written)
                return frozenset(i for i, ty in enumerate(types) if not _no_memory(ty))
            return known
        self.written[key] = None
        try:
            typed = self.typed(fn, types)
            found = analyse(typed, varied, self.writes).written_args(typed)
        finally:
            self.written.pop(key, None)
        self.written[key] = found
        return found


class Construct:
    """``cls(*args)`` in a forward program: ``run(*args, *tangents) -> (obj, dobj)``, the
    object made as Python makes it and its tangent (``ObjectTangent``) filled by ``__init__``'s
    forward program (``init``: the object, the ``n`` arguments, the defaults, then the
    tangents of the object and of the varied arguments)."""

    __slots__ = ("cls", "init", "n", "defaults", "__weakref__")

    def __init__(
        self,
        cls: type,
        init: t.Callable[..., t.Any] | None,
        n: int = 0,
        defaults: tuple[object, ...] = (),
    ) -> None:
        self.cls, self.init, self.n, self.defaults = cls, init, n, defaults

    def __call__(self, *a: t.Any) -> tuple[t.Any, ObjectTangent]:
        obj: t.Any = object.__new__(self.cls)
        dobj = ObjectTangent()
        if self.init is not None:
            n = self.n
            self.init(obj, *a[:n], *self.defaults, dobj, *a[n:])
        return obj, dobj


_KNOWN = 256  # callees a ``DynamicCalls`` keeps, the oldest dropped first


class DynamicCalls:
    """The forward rule of a call whose callee is known only at run time (read from a
    closure's cell, passed as an argument): found on each new callee and argument types, then
    kept.  ``calls(callee, *args, *tangents)`` with None where an argument has no tangent
    returns ``(y, dy)``."""

    def __init__(self, builder: ProgramBuilder) -> None:
        self.builder = builder
        self.known: dict[tuple[object, ...], tuple[object, t.Callable[..., t.Any]]] = {}

    def __call__(self, callee: t.Any, *rest: t.Any, **kwargs: t.Any) -> tuple[t.Any, t.Any]:
        return self.with_tangent(callee, None, *rest, **kwargs)

    def with_tangent(
        self, callee: t.Any, dcallee: t.Any, *rest: t.Any, **kwargs: t.Any
    ) -> tuple[t.Any, t.Any]:
        """The call, ``dcallee`` the callee's tangent: a closure made in the differentiated
        code has its cells' boxes (``ClosureTangent``), which its program takes first."""
        n = len(rest) // 2
        return self.call(callee, dcallee, rest[:n], rest[n:], kwargs, {})

    def named(
        self, callee: t.Any, dcallee: t.Any, kwnames: tuple[str, ...], *rest: t.Any
    ) -> tuple[t.Any, t.Any]:
        """The call with keyword arguments that have tangents: ``rest`` is the positional
        arguments, their tangents, the keywords' values, then theirs (None: none)."""
        k = len(kwnames)
        n = (len(rest) - 2 * k) // 2
        values, named = rest[2 * n : 2 * n + k], rest[2 * n + k :]
        dkwargs = {name: d for name, d in zip(kwnames, named) if d is not None}
        return self.call(
            callee, dcallee, rest[:n], rest[n : 2 * n], dict(zip(kwnames, values)), dkwargs
        )

    def call(
        self,
        callee: t.Any,
        dcallee: t.Any,
        args: tuple[t.Any, ...],
        tangents: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        dkwargs: dict[str, t.Any],
    ) -> tuple[t.Any, t.Any]:
        """``callee(*args, **kwargs)`` with the tangents of the arguments (None: none) and of
        the keywords' values (``dkwargs``, by name: missing, none)."""
        if type(callee) is pytypes.MethodType and user_class(type(callee.__self__)):
            # ``obj.method(...)``: the function, with the object (and its tangent) first
            d = dcallee if type(dcallee) is ObjectTangent else None
            fn, obj = callee.__func__, callee.__self__
            return self.call(fn, None, (obj, *args), (d, *tangents), kwargs, dkwargs)
        if type(dcallee) is ObjectTangent:
            # ``obj(...)``: its class's ``__call__``, with the object and its tangent first
            if type(callee) is pytypes.MethodType:
                fn, obj = callee.__func__, t.cast(t.Any, callee.__self__)
            else:
                fn, obj = type(callee).__call__, callee
            return self.call(fn, None, (obj, *args), (dcallee, *tangents), kwargs, dkwargs)
        if type(callee) is pytypes.BuiltinMethodType and type(callee.__self__) is list:
            return list_method(callee, dcallee, args, tangents, kwargs)
        if _replace_method(callee) and not args:  # (a NamedTuple's: fields by keyword)
            replaced = {k: FR.like(v, dkwargs.get(k)) for k, v in kwargs.items()}
            y = callee(**kwargs)
            return y, (FR.like(y, None) if dcallee is None else dcallee(**replaced))
        named = [dkwargs.get(k) for k in kwargs]
        varied = tuple(d is not None for d in (*tangents, *named))
        types = tuple(T.typeof(a) for a in (*args, *kwargs.values()))
        boxes = dcallee.cells if type(dcallee) is ClosureTangent else None
        # (a closure's program takes the function: closures made anew of one code share it)
        shared = function_key(callee) if boxes is not None else None
        key = (shared or id(callee), types, varied, tuple(kwargs), boxes is not None)
        hit = self.known.get(key)
        if hit is None or shared is None and hit[0] is not callee:
            found = self._find(callee, args, kwargs, types, varied, boxes is not None)
            if len(self.known) >= _KNOWN:  # (a new closure per call must not grow it forever)
                del self.known[next(iter(self.known))]
            hit = self.known[key] = (callee if shared is None else None, found)
        given = (*args, *kwargs.values(), *(d for d in (*tangents, *named) if d is not None))
        y, dy = hit[1](*given) if boxes is None else hit[1](_wrapped(callee), boxes, *given)
        return y, FR.like(y, None) if dy is None else dy

    def star(
        self,
        callee: t.Any,
        dcallee: t.Any,
        args: t.Any,
        dargs: t.Any,
        kwargs: t.Any = None,
        dkwargs: t.Any = None,
    ) -> tuple[t.Any, t.Any]:
        """``callee(*args, **kwargs)`` (``call_ex``), ``dargs`` the tangent of ``args`` (a
        sequence of the items' tangents, or None) and ``dkwargs`` of ``kwargs`` (a dict)."""
        args = tuple(args)
        given = (None,) * len(args) if dargs is None else tuple(dargs)
        # (an int's tangent in a container of tangents is 0.0: it has none)
        tangents = tuple(None if _tangentless_value(a) else d for a, d in zip(args, given))
        kwargs = dict(kwargs or {})
        named = {
            k: d for k, d in (dkwargs or {}).items() if not _tangentless_value(kwargs.get(k))
        }
        return self.call(callee, dcallee, args, tangents, kwargs, named)

    def _find(
        self,
        fn: t.Any,
        args: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        types: tuple[T.Type, ...],
        varied: tuple[bool, ...],
        closure: bool = False,
    ) -> t.Callable[..., t.Any]:
        """``run(*args, *kwarg_values, *tangents) -> (y, dy or None)`` for this callee (with
        ``closure``, ``run(boxes, ...)``: a Python function made over cells with boxes)."""
        name = entry_point_name(fn)
        if name is not None:
            raise ForwardModeError(f"forward mode: a call of {name}: {higher_order_hint()}")
        kwnames = tuple(kwargs)
        n = len(args)
        if not any(varied) and not closure:  # (no tangent in: none out)
            return lambda *a: (fn(*a[:n], **dict(zip(kwnames, a[n:]))), None)
        try:
            registration = lookup_rule(self.builder.session.ctx, fn, types, kwnames)
        except (MissingRuleError, TypeError):
            registration = None
        if registration is not None and registration.kind == "zero_derivative":
            return lambda *a: (fn(*a[:n], **dict(zip(kwnames, a[n : len(types)]))), None)
        if any(varied[n:]) and not isinstance(fn, pytypes.FunctionType):
            raise ForwardModeError(
                f"forward mode: {callable_name(fn)}, called through a value computed at run "
                "time with a keyword argument that has a tangent: pass it by position"
            )
        made = self.builder.primitive(fn, types, kwnames, varied, None)
        if isinstance(made, FR.Emit):  # (its result's type, from the call at hand)
            result_type = T.typeof(fn(*args, **kwargs))
            return primitive_program(fn, types, kwnames, varied, made, result_type)
        if made is not None:
            return primitive_run(fn, made, types, kwnames, varied)
        if generator_function(fn) and derivable_function(fn):
            if self.builder.generator_writes(fn, types):
                raise ForwardModeError(
                    f"forward mode: the generator {callable_name(fn)}, called through a value "
                    "computed at run time, writes into what it is given: forward mode follows "
                    "such a write only where the callee is known when the rule is built (call "
                    "it by its module-level name)"
                )
            return frame_maker(fn, n, kwnames, varied, closure)
        if isinstance(fn, runtime.GenexprFunction) and not kwnames:
            # (a generator expression run eagerly: its IR returns the list of its values)
            return self.builder.program(fn, types, varied, closure)
        if closure and not (isinstance(fn, pytypes.FunctionType) and derivable_function(fn)):
            raise ForwardModeError(f"forward mode: {callable_name(fn)} with a closure tangent")
        if isinstance(fn, pytypes.FunctionType) and derivable_function(fn):
            binding = bind_packed(fn, n, kwnames)
            if binding is None:
                raise ForwardModeError(
                    f"forward mode: this call of {callable_name(fn)}, which Python would refuse"
                )
            full_types, full_varied = bound(binding, types, varied)
            made = self.builder.program(fn, full_types, full_varied, closure)
            written = self.builder.written_args(fn, full_types, full_varied)
            # (an object with a tangent: its attributes' tangents are the caller's too)
            written = frozenset(
                i for i in written
                if not (full_varied[i] and _user_object(full_types[i]))
            )
            if written:
                raise ForwardModeError(
                    f"forward mode: {callable_name(fn)}, called through a value computed at run "
                    f"time, writes into its argument {min(written)}: forward mode follows such "
                    "a write only where the callee is known when the rule is built (call it by "
                    "its module-level name)"
                )
            if binding == list(range(n)):
                return made
            return _bound_run(fn, binding, n + len(kwnames), varied, full_varied, made, closure)
        raise ForwardModeError(
            f"forward mode: {callable_name(fn)}({', '.join(map(str, types))}), called through a "
            "value computed at run time, has no forward rule"
        )


_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async


def list_method(
    method: t.Any,
    dmethod: t.Any,
    args: tuple[t.Any, ...],
    tangents: tuple[t.Any, ...],
    kwargs: dict[str, t.Any],
) -> tuple[t.Any, t.Any]:
    """``xs.append(x)`` and the other methods of a list, called through a value of a type the
    build could not tell (``obj.items.append(x)``): the same method of the tangent list
    (``dmethod``, from ``getattr``), with the tangents of the values and the primal's
    indices, so the tangent list stays the list of the items' tangents."""
    name = method.__name__
    xs = method.__self__
    if name in _LIST_READS:
        y = method(*args, **kwargs)
        return y, (dmethod(*args, **kwargs) if name == "copy" and dmethod is not None else None)
    if name not in _LIST_WRITES or kwargs:
        raise ForwardModeError(f"forward mode: list.{name}, called through a value computed at run time")
    if type(dmethod) is not pytypes.BuiltinMethodType:  # (a list without a tangent)
        if any(d is not None for d in tangents):
            raise ForwardModeError(
                f"forward mode: list.{name} of a value with a tangent into a list that has none "
                "(a list made outside the differentiated code, or of constants where forward "
                "mode could not see it written): make the list from the values differentiated"
            )
        return method(*args), None
    if name == "remove":  # (by equality: the position the primal removes at)
        k = xs.index(args[0])
        method(*args)
        t.cast(list[t.Any], dmethod.__self__).pop(k)
        return None, None
    if name == "extend" and not isinstance(args[0], (list, tuple)):
        raise ForwardModeError(
            f"forward mode: list.extend of a {type(args[0]).__name__}: its tangent is followed "
            "for a list or a tuple"
        )
    values = _LIST_WRITES[name]  # (which arguments are values: the others are indices)
    given = [FR.like(a, d) if k in values else a for k, (a, d) in enumerate(zip(args, tangents))]
    y = method(*args)
    dy = dmethod(*given)
    return y, FR.like(y, dy) if name == "pop" else None


#: the methods of a list that write into it, and which of their arguments are values
_LIST_WRITES: dict[str, frozenset[int]] = {
    "append": frozenset({0}), "extend": frozenset({0}), "insert": frozenset({1}),
    "pop": frozenset(), "clear": frozenset(), "reverse": frozenset(), "remove": frozenset(),
}  # fmt: skip
_LIST_READS = frozenset({"index", "count", "copy", "__len__", "__contains__"})


def _replace_method(fn: object) -> bool:
    """``p._replace`` of a NamedTuple ``p``."""
    if type(fn) is not pytypes.MethodType or getattr(fn, "__name__", None) != "_replace":
        return False
    return isinstance(fn.__self__, tuple) and hasattr(type(fn.__self__), "_fields")


def _tangentless_value(a: object) -> bool:
    return a is None or isinstance(a, (bool, int, str, bytes, np.integer, np.bool_))


def _bound_run(
    fn: pytypes.FunctionType,
    binding: list[int | Default | Packed],
    total: int,
    varied: tuple[bool, ...],
    full_varied: tuple[bool, ...],
    made: t.Callable[..., t.Any],
    closure: bool,
) -> t.Callable[..., t.Any]:
    """``run([fn, boxes,] *args, *kwarg_values, *tangents of the varied) -> (y, dy)``: the
    operands bound to ``fn``'s parameters (``binding``), then ``made``, its program for them.
    Defaults are read from the function called (one made anew may have others)."""
    names = ir_parameters(fn)
    first = fn.__code__.co_argcount - len(fn.__defaults__ or ())  # (the first with a default)

    def run(*a: t.Any) -> t.Any:
        head, a = (a[:2], a[2:]) if closure else ((), a)
        callee = head[0] if closure else fn
        rest = iter(a[total:])
        d = [next(rest) if v else None for v in varied]
        values: list[t.Any] = []
        tangents: list[t.Any] = []
        for i, (w, v) in enumerate(zip(binding, full_varied)):
            if isinstance(w, Default):
                kw = callee.__kwdefaults__ or {}
                pos: tuple[t.Any, ...] = callee.__defaults__ or ()
                values.append(kw[names[i]] if names[i] in kw else pos[i - first])
            elif isinstance(w, int):
                values.append(a[w])
                if v:
                    tangents.append(d[w])
            else:
                items = [a[k] for k in w.indices]
                ds = [FR.like(a[k], d[k]) for k in w.indices]
                if w.names is None:
                    values.append(tuple(items))
                    tangents += [tuple(ds)] if v else []
                else:
                    values.append(dict(zip(w.names, items)))
                    tangents += [dict(zip(w.names, ds))] if v else []
        return made(*head, *values, *tangents)

    return run


#: What gets a forward program: a Python function, or the resume function of a generator
#: function or the function of a generator expression (``gibbous.ir.runtime``)
Programmed = t.Union[pytypes.FunctionType, runtime.GeneratorResume, runtime.GenexprFunction]


def _reads_itself_through_cells(f: Function, fn: pytypes.FunctionType) -> bool:
    """Whether ``f``, the IR of ``fn``, reads ``fn`` only as ``closure_cell(fn, i)``."""
    for op in f.calls():
        for k, v in enumerate(op.operands):
            if isinstance(v, Constant) and v.value is fn:
                cell = isinstance(op.callee, Constant) and op.callee.value is runtime.closure_cell
                if not (cell and k == 1):
                    return False
    return True


def _wrapped(fn: Programmed) -> pytypes.FunctionType:
    """The Python function whose code ``fn``'s IR is made of."""
    return fn if isinstance(fn, pytypes.FunctionType) else fn.fn


def _user_object(ty: T.Type) -> bool:
    return isinstance(ty, T.Object) and user_class(ty.cls)


def _no_memory(ty: T.Type) -> bool:
    return isinstance(ty, (T.Float, T.Int, T.Bool, T.Const, T.NoneType, T.Str))


def _missing(
    fn: object,
    types: tuple[T.Type, ...],
    kwnames: tuple[str, ...],
    loc: Location | None,
    why: str,
) -> ForwardModeError:
    n = len(types) - len(kwnames)
    shown = [str(ty) for ty in types[:n]] + [f"{k}={ty}" for k, ty in zip(kwnames, types[n:])]
    at = f" at {loc.file}:{loc.line}" if isinstance(loc, Location) else ""
    return ForwardModeError(
        f"forward mode: {callable_name(fn)}({', '.join(shown)}){at}: {why}.  This version of "
        "build_frule has forward rules for NumPy's and Python's elementwise functions, "
        "reductions and statistics, products, linear algebra, indexing, reshaping and joining "
        "(docs/rules.md lists the rest as reverse-only, with why); use build_rrule and "
        "value_and_pullback for those"
    )
