"""The forward programs of one build (``ProgramBuilder``): one per Python function, argument
types and varied arguments, compiled once and kept; recursion reaches a program still being
built when it is called (``_Later``).  The builder answers the transform's questions about
calls (``gibbous.forward.transform``'s resolver): which rule a callee has, what a call may write
into, how an object of a Python class is made (``Construct``)."""

from __future__ import annotations

import types as pytypes
import typing as t

import numpy as np


from gibbous.backends.numpy.codegen import compile_function
from gibbous.ir import names, runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Call, Constant, Function, Location, Value
from gibbous.infer.implementations import (
    forward_twin, implementation, is_twin, library_of, register_shell, tangent_to_derive,
)  # fmt: skip
from gibbous.forward.transform import ForwardModeError, jvp_transform
from gibbous.forward.calls import Site
from gibbous.forward.generators import generator_function
from gibbous.ir.exceptions import UnsupportedConstructError
from gibbous.forward.activity import Default, analyse, bind_call, bind_packed, bound, operands
from gibbous.rules import frules
from gibbous.rules import inplace_forward
from gibbous.rules import no_derivative
from gibbous.forward.frames import Steps
from gibbous.reverse.generators import FRAME
from gibbous.rules.emit import ObjectTangent
from gibbous.rules.public_names import callable_name, entry_point_name, higher_order_hint
from gibbous.rules.call_adapters import Packed
from gibbous.reverse.dynamic_calls import function_key
from gibbous.rules.registry import MissingRuleError, has_no_derivative, lookup_rule
from gibbous.session import Session
from gibbous.tangents.classes import Machinery
from gibbous.forward.dynamic import DynamicCalls, program_of, star_program_of
from gibbous.forward.primitive import (
    _GENERATOR_FLAGS, Programmed, _missing, _no_memory, _reads_itself_through_cells, _wrapped,
    derivable_function,
)


#: Programs of one function being built at once beyond which a recursive call's number
#: constants are widened (``ProgramBuilder.recursive_types``).
RECURSION_DEPTH = 8


class _Later(Machinery):
    """A forward program still being built (recursion): found when first called (gibbous's
    machinery: an hvp's reverse pass holds it as a constant, with no tangent)."""

    __slots__ = ("builder", "key", "fn")

    def __init__(self, builder: ProgramBuilder, key: tuple[object, ...]) -> None:
        self.builder, self.key = builder, key
        self.fn: t.Callable[..., t.Any] | None = None

    def __call__(self, *args: t.Any) -> t.Any:
        fn = self.fn
        if fn is None:
            fn = self.fn = self.builder.done[self.key]
        return fn(*args)

    def target(self) -> pytypes.FunctionType | None:
        """The program it stands for, once built (what reverse mode differentiates: a
        Hessian-vector product of recursion)."""
        fn = self.fn or self.builder.done.get(self.key)
        return fn if isinstance(fn, pytypes.FunctionType) else None


register_shell(_Later, _Later.target)


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
        # functions whose program (or written arguments) is being found, by how many times
        self.open: dict[object, int] = {}

    def program(
        self,
        fn: Programmed,
        types: tuple[T.Type, ...],
        varied: tuple[bool, ...],
        closure: bool = False,
    ) -> t.Callable[..., t.Any]:
        """``fn``'s forward program; with ``closure``, one that takes the boxes of ``fn``'s
        cells first (``gibbous.library.python.closures``).  ``fn`` may be a generator's resume
        function or a generator expression's (``gibbous.ir.runtime``): their IR reads the
        cells of the Python function they wrap.

        A closure's program reads the cells of the function it is given, so functions made
        anew of one code (a closure made on every call) share it, keyed by ``function_key``:
        one program, not one per function made (each compiled, and kept)."""
        shared = function_key(fn) if closure else None
        if shared is not None and shared in self.unshared:
            shared = None
        base = function_key(fn) or fn  # (recursion is counted by code: closures made anew)
        types = self.recursive_types(base, types)
        key: tuple[object, ...] = (fn, types, varied, closure) if shared is None else (
            shared, types, varied
        )
        hit = self.done.get(key)
        if hit is not None:
            return hit
        if key in self.building:
            return _Later(self, key)
        self.building.add(key)
        self.open[base] = self.open.get(base, 0) + 1
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
            self.open[base] -= 1
        return made

    def recursive_types(self, fn: object, types: tuple[T.Type, ...]) -> tuple[T.Type, ...]:
        """The types to build ``fn`` for, called with ``types`` while ``RECURSION_DEPTH`` of
        its programs are being built: its numbers' constants widened (recursion on a counter,
        ``depth + 1``, reaches one program typed ``i64``, not one per level without end:
        NumPy's ``_block_info_recursion``).  Shallower recursion keeps its constants (a
        branch on ``m == 0`` in ``np.polyder(p, 2)`` folds at every level)."""
        if self.open.get(fn, 0) < RECURSION_DEPTH:
            return types
        return tuple(_widen_number(ty) for ty in types)

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

    def program_of(self) -> t.Callable[..., t.Any]:
        """(``Resolver.program_of``)"""
        return program_of

    def star_program_of(self) -> t.Callable[..., t.Any]:
        """(``Resolver.star_program_of``)"""
        return star_program_of

    def resume_program(self, fn: pytypes.FunctionType, closure: bool) -> t.Callable[..., t.Any]:
        """The forward program of generator function ``fn``'s resume function: ``run([fn, boxes,]
        frame, dframe) -> (y, dy)`` (``gibbous.forward.frames``)."""
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
    ) -> frules.Tangent | frules.Emit | None:
        no_derivative.check(fn, varied, kwnames, loc, "forward")  # (a tangent it has no rule for)
        maker = frules.forward_maker(fn)
        made = None if maker is None else maker(types, kwnames, varied)
        if made is None or isinstance(made, frules.Emit) or not self.reversible:
            return made
        # A program reverse mode differentiates again (a Hessian-vector product's): the
        # written form where there is one, else a call of the tangent function, which reverse
        # mode derives as it derives the user's code (``tangent_to_derive``).
        written = frules.written_form(fn, types, kwnames, varied)
        if written is not None:
            return written
        tangent = tangent_to_derive(made, fn)
        return made if tangent is None else _calling(tangent)

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
        if has_no_derivative(registration):
            return Site("zero")
        tangent = self.primitive(fn, types, kwnames, varied, loc)
        if tangent is not None:
            shown = f"forward.tangent<{callable_name(fn)}>"  # (for the IR's text)
            return Site("tangent", names.printable(tangent, shown))
        code = self.derived_code(fn, types, kwnames) if registration is None else None
        if code is not None:
            if kwnames:
                raise _missing(fn, types, kwnames, loc, "keyword arguments of a Python function")
            return Site("derived", self.program(code, types, varied))
        raise _missing(fn, types, kwnames, loc, "no forward rule")

    def derived_code(
        self, fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]
    ) -> pytypes.FunctionType | None:
        """The Python function whose forward program calls of ``fn`` run, if they run one:
        ``fn`` itself, or the function a NumPy dispatcher calls (``gibbous.infer.
        implementations``), when no rule is registered for ``fn`` (no forward rule, for
        NumPy's and SciPy's own Python: a reverse rule does not make a forward one)."""
        twin = forward_twin(fn, types, kwnames)  # (``map``'s: reverse mode's rule is another)
        if twin is not None:
            return twin
        code = implementation(fn)  # (a twin first: SciPy's functions are Python too)
        if code is None and isinstance(fn, pytypes.FunctionType) and derivable_function(fn):
            code = fn
        if code is None or frules.forward_maker(fn) is not None and not (
            (is_twin(code) or fn in _SEVERAL_ARRAYS) and not _takes_types(fn, types, kwnames)
        ):  # (a twin of ours takes what the forward rule declines: np.einsum's sublists; so
            # does NumPy's own Python for np.atleast_1d of several arrays)
            return None
        try:
            registration = lookup_rule(self.session.ctx, fn, types, kwnames)
        except (MissingRuleError, TypeError):
            return code
        if has_no_derivative(registration):
            return None
        # (a reverse rule alone does not stop NumPy's Python: it is no forward rule)
        return code if library_of(code) is not None else None

    def writes(self, op: Call, varied: tuple[bool, ...]) -> frozenset[int]:
        """The operands ``op`` may write into: a primitive's by ``inplace_forward``; a Python
        function's from its own IR, for these varied arguments."""
        if not isinstance(op.callee, Constant):
            return frozenset()  # (a callee found at run time is refused there if it writes)
        fn = op.callee.value
        types = tuple(v.type for v in operands(op))
        kwnames = tuple(op.kwargs)
        if generator_function(fn):
            return self.generator_writes(fn, types)
        code = self.derived_code(fn, types, kwnames)
        if code is None:
            return inplace_forward.written_operands(fn, types, kwnames)
        fn = code
        binding = bind_packed(fn, len(op.args), kwnames)
        if binding is None:  # (refused where the call is made)
            return frozenset()
        full_types, full_varied = bound(binding, types, varied)
        return written_operands(self.written_args(fn, full_types, full_varied), binding, fn, op.loc)

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
        base = function_key(fn) or fn  # (functions made anew of one code: one)
        types = self.recursive_types(base, types)
        key = (base, types, varied)
        if key in self.written:
            known = self.written[key]
            if known is None:  # (recursion: every array argument may be written)
                return frozenset(i for i, ty in enumerate(types) if not _no_memory(ty))
            return known
        self.written[key] = None
        self.open[base] = self.open.get(base, 0) + 1
        try:
            typed = self.typed(fn, types)
            found = analyse(typed, varied, self.writes).written_args(typed)
        finally:
            self.written.pop(key, None)
            self.open[base] -= 1
        self.written[key] = found
        return found


def _widen_number(ty: T.Type) -> T.Type:
    """``ty`` without its constant where it is an int's or a float's (not a bool's: a flag
    stays known)."""
    if isinstance(ty, T.Const) and type(ty.value) in (int, float):
        return T.widen(ty)
    return ty


def written_operands(
    written: frozenset[int],
    binding: t.Sequence[int | Default | Packed],
    fn: pytypes.FunctionType,
    loc: object,
) -> frozenset[int]:
    """The operands of a call bound by ``binding`` (``bind_packed``) that ``fn`` writes into,
    from the parameters it writes into; a default value written into is refused."""
    out: set[int] = set()
    for i in written:
        where = binding[i]
        if isinstance(where, Packed):  # (an item of ``*args`` or ``**kwargs``)
            out.update(where.indices)
        elif isinstance(where, Default):
            at = f" at {loc.file}:{loc.line}" if isinstance(loc, Location) else ""
            raise ForwardModeError(
                f"forward mode: {callable_name(fn)}{at} writes into the default value of "
                f"its parameter {i}, an array shared by every call: pass the array"
            )
        else:
            out.add(where)
    return frozenset(out)


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


def _calling(tangent: pytypes.FunctionType) -> frules.Emit:
    """The tangent written as a call of the tangent function ``tangent(z, *operands,
    *tangents, **kwargs)`` (None for an operand without one)."""

    def emit(
        b: Builder, z: Value, args: frules.Values, dx: frules.Tangents, kwargs: frules.Keywords
    ) -> Value:
        tangents = [Constant(None) if d is None else d for d in dx]
        return b.call(tangent, z, *args, *tangents, kwargs=dict(kwargs), type=z.type)

    return frules.Emit(emit)


#: Forward rules of one array whose calls of several NumPy's own Python makes (a tuple).
_SEVERAL_ARRAYS: frozenset[object] = frozenset((np.atleast_1d, np.atleast_2d))


def _takes_types(fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]) -> bool:
    """Whether ``fn`` has a forward rule for operands of these types: one that declines them
    (np.einsum's of a subscripts string, given sublists) leaves the call to its twin."""
    maker = frules.forward_maker(fn)
    if maker is None:
        return False
    n = len(types)
    tried = ((True,) * n, (True,) + (False,) * (n - 1), (False,) * n, (False,) + (True,) * (n - 1))
    try:
        return any(maker(types, kwnames, v) is not None for v in tried[: 4 if n > 1 else 3])
    except Exception:  # (a maker that refuses by raising: it is the rule)
        return True
