"""The pipeline driver: one ``Session`` per ``build_rrule``.

A session builds the programs of the functions one ``build_rrule`` reaches (the entry point,
and every Python function its code calls), each once per argument types, so that a function
called from several places, or recursively, is compiled once; and it chooses the rule of each
active call site (a registered primitive, a derived rule, a constructor, a dynamic rule).  Its
``resolve`` serves the dynamic call sites, which may build more programs while they run.
"""

from __future__ import annotations

import builtins
import dis
import functools
import inspect
import threading
import types as pytypes
import typing as t

import attrs

from gibbous.backends.numpy.adcodegen import compile_program
from gibbous.frontend import function_ir
from gibbous.ir.exceptions import UnsupportedConstructError
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Function, Location, guard_of
from gibbous.ir.names import CallableSet
from gibbous.passes import Pass, PassManager
from gibbous.reverse.activity import Activity, analyse, carries_rdata, is_precise
from gibbous.reverse.transform import (
    differentiate,
    isolate_guarded_calls,
    prune_attribute_reads,
    slot_type_is_precise,
)
from gibbous.reverse.shared_objects import Rebuild, SharedObjects
from gibbous.infer import InferenceError, infer_types
from gibbous.rules.public_names import entry_point_name, higher_order_hint
from gibbous.rules.call_adapters import (
    BoundRule,
    FillSeed,
    GenexprRule,
    Packed,
    PrimalRule,
    Source,
)
from gibbous.rules.callables import (
    InstanceCallRule,
    PartialRule,
    PropertyRule,
    WrappedCallRule,
    cached,
    callable_instance,
    partial_shape,
    property_function,
)
from gibbous.reverse.construction import (
    ConstructRule,
    FrozenConstructRule,
    class_methods,
    constructible,
)
from gibbous.reverse.debug_checks import CheckedRule, rule_name
from gibbous.infer.implementations import (
    implementation, is_twin, library_file, library_of, tangent_of,
)  # fmt: skip
from gibbous.rules.emit import tangent_refused
from gibbous.reverse.derived import LazyDerivedRule, Program, ir_parameters
from gibbous.reverse.dynamic_calls import DynamicRule, function_key
from gibbous.reverse.generators import (
    CONSUMERS,
    FRAME,
    DrainRule,
    GeneratorCallRule,
    GeneratorNextRule,
    iter_frame_rrule,
    load_frame_rrule,
    save_frame_rrule,
)
from gibbous.reverse.higher_order import rule_factory
from gibbous.rules.inline import InlineRule
from gibbous.rules import no_derivative
from gibbous import library as library  # registers every rule (its one ordered list)
from gibbous.library.python.classes import by_code
from gibbous.rules.registry import (
    Context,
    MissingRuleError,
    RRule,
    callable_name,
    is_primitive,
    lookup_rule,
)
from gibbous.rules.stateful import StatefulRRule
from gibbous.tangents.model import CoDual, frozen_fields, zero_fdata
from gibbous.infer.typerules.table import instance_type

_F64 = T.Float("float64")
_FORM_KINDS = frozenset(("primitive", "stateful"))  # registrations an inline form may replace

STANDARD_PIPELINE: tuple[str, ...] = ("array-items", "fold", "dce", "cse", "simplify-cfg")

Maker = t.Callable[[], t.Any]


def derivable(fn: object) -> t.TypeGuard[pytypes.FunctionType | runtime.GenexprFunction]:
    """Whether gibbous derives the rule of ``fn`` from its bytecode (when it has no rule).

    Python functions, NumPy's and SciPy's own included (what their Python needs that gibbous
    cannot differentiate is reported at the user's call: ``Session._derived_call``), except
    gibbous's own machinery.  (A dispatcher or a twin is not one: ``implementation`` gives
    the function its calls are derived from.)"""
    if isinstance(fn, runtime.GenexprFunction):
        return True
    if not isinstance(fn, pytypes.FunctionType) or entry_point_name(fn) is not None:
        return False
    if is_twin(fn):
        return True  # plain-Python twins of library callables, there to be derived
    return not (fn.__module__ or "").startswith(_INTERNAL)


# gibbous's own machinery; user-level code inside gibbous (the demo, examples) is derivable.
_INTERNAL = tuple(
    f"gibbous.{layer}"
    for layer in (
        "ir", "frontend", "tangents", "infer", "rules", "library", "optional", "passes",
        "reverse", "forward", "backends", "api", "session", "entry", "cache", "toplevel",
        "prepared",
    )
)  # fmt: skip


def source_ir(fn: object) -> Function:
    """The IR a function is differentiated from: its bytecode's (the frontend's), or, for a
    function the backend compiled from IR (``compile_function``: the forward programs that
    Hessian-vector products differentiate), that IR itself, whose callees are constants where
    its bytecode reads them from closure cells."""
    made = getattr(fn, "__gibbous_ir__", None) if isinstance(fn, pytypes.FunctionType) else None
    return made if isinstance(made, Function) else function_ir(fn)


def _callee_ir(fn: object) -> Function | None:
    """For type inference: the IR of the user functions the code calls."""
    if not derivable(fn):
        return None
    try:
        return source_ir(fn)
    except UnsupportedConstructError:
        return None


def globals_read(code: pytypes.CodeType) -> tuple[str, ...]:
    """The names ``code`` reads with ``LOAD_GLOBAL``, its nested code objects' included (they
    share its globals)."""
    names: dict[str, None] = {}
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_GLOBAL":
            names[t.cast(str, ins.argval)] = None
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names.update(dict.fromkeys(globals_read(const)))
    return tuple(names)


def _property(
    callee: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...]
) -> tuple[pytypes.FunctionType, str] | None:
    """The property getter a call ``getattr(obj, name)`` runs, or the setter
    ``setattr(obj, name, v)`` runs, with which of the two it is, if ``obj``'s class is known
    and has a property ``name`` (a constant) written in Python."""
    if not isinstance(callee, Constant) or kwnames or len(types) not in (2, 3):
        return None
    fn = callee.value
    which = "fget" if fn is builtins.getattr else "fset" if fn is builtins.setattr else None
    if which is None or (which == "fget") != (len(types) == 2):
        return None
    if not isinstance(types[0], T.Object) or not isinstance(types[1], T.Const):
        return None
    found = property_function(types[0].cls, types[1].value, which)
    return None if found is None else (found, which)


@attrs.define(eq=False)
class Session:
    """The programs built for one ``build_rrule``, by function and argument types; also the
    resolver of its dynamic call sites (which may build more programs while running)."""

    ctx: Context
    debug: bool
    passes: t.Sequence[Pass | str] | str | None
    _programs: dict[tuple[object, ...], tuple[object, Program]] = attrs.field(factory=dict)
    # Calls whose partial work was lost (``Program.lost``), shared by every program built here.
    lost: dict[int, list[str]] = attrs.field(factory=dict)
    # The globals the programs froze (``Program.frozen``), each (namespace, name) once.
    frozen: list[tuple[dict[str, object], str, object]] = attrs.field(factory=list)
    _frozen_names: set[tuple[int, str]] = attrs.field(factory=set)
    # Globals and captured objects, shared by the programs built here.
    shared: SharedObjects = attrs.field(factory=SharedObjects)
    _building: set[tuple[object, ...]] = attrs.field(factory=set)
    # Dynamic call sites build programs while they run, and the threads sharing a rule run
    # its sites at once (gibbous.toplevel): one builds, the others wait for it.
    # Reentrant: building a program builds its callees' on the same thread.
    _lock: threading.RLock = attrs.field(factory=threading.RLock)

    def key(self, fn: object, arg_types: tuple[T.Type, ...]) -> tuple[object, ...]:
        return (function_key(fn) or ("object", id(fn)), arg_types)

    def program(self, fn: object, arg_types: tuple[T.Type, ...]) -> Program:
        if self._building or self.shared.sealed:
            return self._program(fn, arg_types)
        while True:  # the first program: built again while it finds globals to make active
            try:
                made = self._program(fn, arg_types)
            except Rebuild:
                self._programs.clear()
                self.shared.start_over()
                continue
            self.shared.sealed = True
            return made

    def _program(self, fn: object, arg_types: tuple[T.Type, ...]) -> Program:
        key = self.key(fn, arg_types)
        hit = self._programs.get(key)
        if hit is not None and (hit[0] is fn or function_key(fn) is not None):
            return hit[1]
        with self._lock:
            hit = self._programs.get(key)
            if hit is not None and (hit[0] is fn or function_key(fn) is not None):
                return hit[1]
            if key in self._building:
                raise RuntimeError(f"the program of {callable_name(fn)} is still being built")
            self._building.add(key)
            try:
                made = self._build(fn, arg_types)
            finally:
                self._building.discard(key)
            self._programs[key] = (fn, made)
            return made

    def primal_ir(self, fn: object, arg_types: tuple[T.Type, ...], stage: str = "optimized") -> Function:
        """The IR of ``fn`` the session differentiates, for these argument types: the
        frontend's (``stage="frontend"``), typed (``"typed"``), or after the passes, ready for
        the AD pass (``"optimized"``).  ``gibbous.inspect.code_ir`` shows the same."""
        if not derivable(fn) and not isinstance(fn, runtime.GeneratorResume):
            raise TypeError(
                f"build_rrule derives rules of Python functions; {callable_name(fn)} is not "
                "one (write a rule for it with gibbous.primitive)"
            )
        untyped = source_ir(fn)
        if stage == "frontend":
            return untyped
        if len(untyped.args) != len(arg_types):
            params = ", ".join(a.name or "?" for a in untyped.args)
            raise TypeError(
                f"{callable_name(fn)}({params}) takes {len(untyped.args)} arguments, "
                f"{len(arg_types)} given: build_rrule needs a value for each parameter, "
                "defaults included"
            )
        try:
            typed = infer_types(untyped, arg_types, callee_ir=_callee_ir)
        except InferenceError:
            typed = untyped  # everything Any: the dynamic path is always right
        if stage == "typed":
            return typed
        pipeline = STANDARD_PIPELINE if self.passes is None else self.passes
        PassManager(pipeline, verify=self.debug).run(typed)
        prune_attribute_reads(typed)
        isolate_guarded_calls(typed)
        return typed

    def _build(self, fn: object, arg_types: tuple[T.Type, ...]) -> Program:
        typed = self.primal_ir(fn, arg_types)
        # The IR of a generator expression reads the cells of the function it wraps.
        wrapped = isinstance(fn, (runtime.GenexprFunction, runtime.GeneratorResume))
        owner = t.cast(t.Any, fn).fn if wrapped else fn
        while True:
            activity = analyse(typed, owner, self.shared.written)
            try:
                self.shared.note(typed, activity, fn)
            except Rebuild:
                if not self.shared.sealed:
                    raise  # the whole build starts over (``program``)
                continue  # this function alone, with more objects active
            break
        ad = differentiate(
            typed,
            activity,
            lambda op: self.site(op, activity),
            inline=self.inline,
            verify=self.debug,
            shared=self.shared.coduals,
        )
        self.freeze(t.cast(t.Any, fn).fn if wrapped else fn)
        return compile_program(fn, arg_types, ad, typed, self.lost, self.frozen)

    def freeze(self, fn: object) -> None:
        """Record the module globals ``fn``'s code reads: the frontend froze their values."""
        code = getattr(fn, "__code__", None)
        namespace = getattr(fn, "__globals__", None)
        if code is None or namespace is None:
            return
        for name in globals_read(code):
            key = (id(namespace), name)
            if name in namespace and key not in self._frozen_names:
                self._frozen_names.add(key)
                self.frozen.append((namespace, name, namespace[name]))

    # -- call sites

    def site(self, op: Call, activity: Activity) -> Maker:
        """How each rule instance makes the rule of the active call ``op`` (chosen now); with
        ``debug``, each rule checked (``CheckedRule``)."""
        maker = self._site(op, activity)
        if not self.debug:
            return maker
        call, loc = _describe_call(op), op.loc

        def checked() -> t.Any:
            rule = maker()
            return CheckedRule(rule, rule_name(rule), call, loc)

        return checked

    def inline(self, op: Call) -> InlineRule | None:
        """The inline form of an active call's rule, where the rule is the library's own."""
        callee = op.callee
        if not isinstance(callee, Constant):
            return None
        types = tuple(v.type for v in op.operands[1:])
        fn = callee.value
        result = op.type
        # A float result (every adjoint the form writes is a plain float), or for an array
        # form a float64 array of known rank (the ufunc of a 0-d array returns a scalar).
        array = isinstance(result, T.Array) and result.dtype == "float64" and bool(result.ndim)
        if not (result == _F64 or array) or not is_primitive(self.ctx, fn, types, op.kwnames):
            return None
        registration = lookup_rule(self.ctx, fn, types, op.kwnames, loc=op.loc)
        form = registration.inline
        # A stateful rule's form (matmul's) stands for the rule and its state: nothing to keep.
        if form is None or registration.kind not in _FORM_KINDS or form.arity != len(types):
            return None
        return form if form.array == array else None

    def _site(self, op: Call, activity: Activity) -> Maker:
        operands = op.operands
        types = tuple(v.type for v in operands[1:])
        callee = op.callee
        entry = entry_point_name(callee.value) if isinstance(callee, Constant) else None
        if entry is not None:  # ``gibbous.grad(f)(x)`` inside the function differentiated
            loc = op.loc
            block = op.parent
            function = block.parent if block is not None else None
            raise UnsupportedConstructError(
                f"a call of {entry}",
                loc.file if loc is not None else "?",
                loc.line if loc is not None else 0,
                higher_order_hint(),
                function.name if function is not None else "?",
            )
        if any(isinstance(ty, T.Bottom) for ty in types):
            return lambda: _PRIMAL  # an operand that never exists: the call never runs
        if isinstance(callee, Constant):  # (an operand that carries what it has no rule for)
            active = [activity.is_active(v) for v in operands[1:]]
            no_derivative.check(callee.value, active, op.kwnames, op.loc)
        if isinstance(callee, Constant):
            lowered = self._generator(callee.value, types, op.kwnames, op.loc)
            if lowered is not None:
                return lowered
            steps = callee.value in _STEPS or _consumes(callee.value)
            if steps and types and isinstance(types[0], T.Any):
                # It may be a generator's frame, known only at run time.
                ctx, kwnames, loc = self.ctx, op.kwnames, op.loc
                return lambda: DynamicRule(self, ctx, kwnames, loc)
        prop = _property(callee, types, op.kwnames)
        if prop is not None and any(map(activity.is_active, operands[1:])):  # ``obj.name (= v)`` for a property: ``fget(obj)``, ``fset(obj, v)``
            accessor, which = prop
            operand_types = (types[0], *types[2:])
            inner = self._derived(accessor, len(operand_types), (), operand_types, op.loc)
            return lambda: PropertyRule(inner(), accessor, which)
        if isinstance(callee, Constant):
            fn = callee.value
            maker = self.primitive(fn, types, op.kwnames, op.loc)
            if maker is not None:
                if carries_rdata(op.type) and not slot_type_is_precise(op.type):
                    plain = maker
                    maker = lambda: FillSeed(plain())  # noqa: E731
                return maker
        if not any(map(activity.is_active, operands)):
            # No derivative can flow through it: run it, give the result fresh fdata.
            return lambda: _PRIMAL
        factory = rule_factory(callee.value) if isinstance(callee, Constant) else None
        if factory is not None:  # a rule that calls back into AD: this session resolves
            ctx, loc = self.ctx, op.loc
            return lambda: factory(self, ctx, loc)
        if isinstance(callee, Constant) and _adapted(callee.value):
            ctx, kwnames, loc = self.ctx, op.kwnames, op.loc
            return lambda: DynamicRule(self, ctx, kwnames, loc)  # ``resolve`` adapts them
        if isinstance(callee, Constant) and constructible(callee.value):
            return self._construct(callee.value, len(op.args), op.kwnames, types, op.loc)
        if isinstance(callee, Constant):
            fn = callee.value
            precise = all(map(is_precise, types))
            code = implementation(fn)
            if code is not None and precise:
                inner = self._derived_call(fn, code, op, types)
                return lambda: WrappedCallRule(inner(), code)
            if derivable(fn) and precise:
                return self._derived_call(fn, fn, op, types)
            if precise and not derivable(fn) and guard_of(op) is None:
                # (A guarded call may raise instead, as ``2.0 * "a"`` does: run it to see.)
                raise MissingRuleError(fn, types, op.kwnames, ctx=self.ctx, loc=op.loc)
        ctx, kwnames, loc = self.ctx, op.kwnames, op.loc
        return lambda: DynamicRule(self, ctx, kwnames, loc)

    def primitive(
        self, fn: object, types: tuple[T.Type, ...], kwnames: tuple[str, ...], loc: Location | None
    ) -> Maker | None:
        if not is_primitive(self.ctx, fn, types, kwnames):
            made = by_code(fn)
            return None if made is None else (lambda: made)
        registration = lookup_rule(self.ctx, fn, types, kwnames, loc=loc)
        rule = registration.rule
        if registration.kind == "stateful":
            state_type, debug = registration.state_type, self.debug
            assert state_type is not None
            return lambda: StatefulRRule(t.cast(t.Any, rule), state_type, debug=debug)
        return lambda: rule

    def _derived_call(
        self,
        fn: object,
        code: pytypes.FunctionType | runtime.GenexprFunction,
        op: Call,
        types: tuple[T.Type, ...],
    ) -> Maker:
        """``_derived`` for the call ``op`` of ``fn``, which runs ``code``.  What a library's
        own Python (NumPy's, SciPy's) needs that gibbous cannot differentiate is reported at
        the user's call of the library, as the missing rule of the callable the user called."""
        try:
            return self._derived(code, len(op.args), op.kwnames, types, op.loc)
        except (MissingRuleError, UnsupportedConstructError) as e:
            of = tangent_of(code)
            if of is not None:  # (a forward rule's tangent function, in a Hessian-vector product)
                first = str(e).split("\n", 1)[0]
                raise tangent_refused(callable_name(of), f"at {op.loc}", first) from e
            library = library_of(code)
            if library is None or op.loc is None or library_file(op.loc.file):
                raise
            kwnames, ctx, loc = op.kwnames, self.ctx, op.loc
            raise MissingRuleError(fn, types, kwnames, ctx=ctx, loc=loc, inside=(library, e)) from e

    def _derived(
        self,
        fn: pytypes.FunctionType | runtime.GenexprFunction,
        n_args: int,
        kwnames: tuple[str, ...],
        types: tuple[T.Type, ...],
        loc: Location | None,
    ) -> Maker:
        inner = fn.fn if isinstance(fn, runtime.GenexprFunction) else fn
        order, defaults, param_types, slots = _bind(inner, n_args, kwnames, types, loc)
        if self.key(fn, param_types) not in self._building:
            self.program(fn, param_types)  # now, so that its missing rules are errors now

        def program() -> Program:
            return self.program(fn, param_types)

        def lazy() -> t.Any:
            rule = LazyDerivedRule(program)
            return GenexprRule(rule) if isinstance(fn, runtime.GenexprFunction) else rule

        if order == tuple(range(len(types))) and not kwnames:
            return lazy
        n = len(types)
        return lambda: BoundRule(lazy(), order, defaults, n, slots)

    def _construct(
        self,
        cls: type,
        n_args: int,
        kwnames: tuple[str, ...],
        types: tuple[T.Type, ...],
        loc: Location | None,
    ) -> Maker:
        """``cls(*args)``: the rules of its ``__new__`` and ``__init__`` (``ConstructRule``),
        or field by field for a frozen class (``FrozenConstructRule``)."""
        fields = frozen_fields(cls)
        if fields is not None:
            return lambda: FrozenConstructRule(cls, fields)
        new, init = class_methods(cls)
        new_maker: Maker | None = None
        instance = instance_type(cls)
        if new is not None:
            new_types = (T.typeof(cls, const=True), *types)
            new_fn = t.cast(pytypes.FunctionType, new)
            new_maker = self._derived(new_fn, 1 + n_args, kwnames, new_types, loc)
            instance = T.ANY
        init_maker: Maker | None = None
        if init is not None:
            init_fn = t.cast(pytypes.FunctionType, init)
            init_maker = self._derived(init_fn, 1 + n_args, kwnames, (instance, *types), loc)

        def make() -> ConstructRule:
            return ConstructRule(
                None if new_maker is None else new_maker(),
                None if init_maker is None else init_maker(),
            )

        return make

    def resolve(
        self,
        callee: object,
        arg_types: tuple[T.Type, ...],
        kwnames: tuple[str, ...],
        loc: Location | None,
    ) -> RRule | None:
        """The rule of a dynamic call site for these runtime types (``Resolver``)."""
        carries = [no_derivative.may_carry(ty) for ty in arg_types]  # (activity is not known)
        no_derivative.check(callee, carries, kwnames, loc)
        lowered = self._generator(callee, arg_types, kwnames, loc)
        if lowered is not None:
            return t.cast(RRule, lowered())
        maker = self.primitive(callee, arg_types, kwnames, loc)
        factory = rule_factory(callee)
        if maker is None and factory is not None:
            return factory(self, self.ctx, loc)
        if maker is None and constructible(callee):
            maker = self._construct(callee, len(arg_types) - len(kwnames), kwnames, arg_types, loc)
        n = len(arg_types) - len(kwnames)
        code = implementation(callee)
        if maker is None and code is not None:
            return WrappedCallRule(self._derived(code, n, kwnames, arg_types, loc)(), code)
        if maker is None and derivable(callee):
            maker = self._derived(callee, n, kwnames, arg_types, loc)
        if maker is None and isinstance(callee, functools.partial):
            _, bound, kept = partial_shape(callee, kwnames)
            dynamic = DynamicRule(self, self.ctx, (*kept, *kwnames), loc)
            return PartialRule(dynamic, bound, kept)
        if maker is None and cached(callee):
            wrapped = self.resolve(getattr(callee, "__wrapped__"), arg_types, kwnames, loc)
            return None if wrapped is None else WrappedCallRule(wrapped)
        if maker is None and callable_instance(callee):
            method = t.cast(pytypes.FunctionType, type(callee).__call__)
            types = (T.typeof(callee), *arg_types)
            return InstanceCallRule(self._derived(method, 1 + n, kwnames, types, loc)())
        return None if maker is None else t.cast(RRule, maker())


    # -- generators (gibbous.reverse.generators)

    def _generator(
        self,
        fn: object,
        types: tuple[T.Type, ...],
        kwnames: tuple[str, ...],
        loc: Location | None,
    ) -> Maker | None:
        """The rules of the generator lowering: calling a generator function, stepping or
        iterating its frame, and the frame's own load and save."""
        if fn is runtime.load_frame:
            return lambda: load_frame_rrule
        if fn is runtime.save_frame:
            return lambda: save_frame_rrule
        stepped = bool(types) and types[0] == FRAME
        if stepped and fn is builtins.iter and len(types) == 1:
            return lambda: iter_frame_rrule
        if stepped and (fn is runtime.next_or_stop or fn is builtins.next) and not kwnames:
            stop = fn is builtins.next
            return lambda: GeneratorNextRule(self._resume_rule, stop_iteration=stop)
        if stepped and _consumes(fn):
            make_list = self.primitive(runtime.make_list, (T.ANY,), (), loc)
            assert make_list is not None

            def consumer(types: tuple[T.Type, ...]) -> RRule:
                rule = self.resolve(fn, types, kwnames, loc)
                if rule is None:
                    raise MissingRuleError(fn, types, kwnames, ctx=self.ctx, loc=loc)
                return rule

            return lambda: DrainRule(GeneratorNextRule(self._resume_rule), make_list(), consumer)
        if isinstance(fn, pytypes.FunctionType) and inspect.isgeneratorfunction(fn):
            n = len(types) - len(kwnames)
            order, defaults, _, slots = _bind(fn, n, kwnames, types, loc)
            if order == tuple(range(len(types))) and not kwnames:
                return lambda: GeneratorCallRule()
            count = len(types)
            return lambda: BoundRule(GeneratorCallRule(), order, defaults, count, slots)
        return None

    def _resume_rule(self, fn: object) -> RRule:
        resume = runtime.GeneratorResume(t.cast(pytypes.FunctionType, fn))
        return LazyDerivedRule(lambda: self.program(resume, (FRAME,)))


_PRIMAL = PrimalRule()
_STEPS: CallableSet[object] = CallableSet([builtins.iter, builtins.next, runtime.next_or_stop])


def _consumes(fn: object) -> bool:
    """A consumer that exhausts the generator it is given (``sum(gen())``)."""
    return fn in CONSUMERS




def _adapted(fn: object) -> bool:
    """Callables whose call is another's: partials, instances with ``__call__``, memoised
    functions."""
    return isinstance(fn, functools.partial) or callable_instance(fn) or cached(fn)


def _describe_call(op: Call) -> str:
    """``numpy.sin(f64[:])``, or ``<dynamic>(...)`` for a callee known only at run time."""
    from gibbous.rules.registry import format_call

    types = tuple(v.type for v in op.operands[1:])
    callee = op.callee
    if not isinstance(callee, Constant):
        return "a callee known at run time"
    try:
        return format_call(callee.value, types, op.kwnames)
    except Exception:  # a type without a printable name: the callee's name is enough
        return callable_name(callee.value)


def _bind(
    fn: pytypes.FunctionType,
    n_args: int,
    kwnames: tuple[str, ...],
    types: tuple[T.Type, ...],
    loc: Location | None,
) -> tuple[
    tuple[Source, ...],
    tuple[CoDual[t.Any, t.Any] | None, ...],
    tuple[T.Type, ...],
    tuple[tuple[str, t.Any] | None, ...],
]:
    """Where each parameter of ``fn``'s IR comes from in a call with ``n_args`` positional
    arguments and keywords ``kwnames``: an operand index, or a default (with its CoDual, and
    where the function keeps it: ``("pos", k)`` or ``("kw", name)``)."""
    signature = runtime.code_signature(fn)  # its own parameters
    try:
        bound = signature.bind(*range(n_args), **{k: n_args + i for i, k in enumerate(kwnames)})
    except TypeError as e:
        where = f" at {loc}" if loc is not None else ""
        raise TypeError(f"call of {callable_name(fn)}{where}: {e}") from None
    passed = dict(bound.arguments)
    bound.apply_defaults()
    order: list[Source] = []
    defaults: list[CoDual[t.Any, t.Any] | None] = []
    param_types: list[T.Type] = []
    slots: list[tuple[str, t.Any] | None] = []
    positional = [
        p.name
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    n_defaults = len(fn.__defaults__ or ())
    for code_name in ir_parameters(fn):
        # A generator expression's argument is ``.0`` in its code, ``implicit0`` to inspect.
        name = code_name if code_name[:1] != "." else f"implicit{code_name[1:]}"
        kind = signature.parameters[name].kind
        value = bound.arguments[name]
        if kind is inspect.Parameter.VAR_POSITIONAL:
            indices = tuple(t.cast(tuple[int, ...], value))
            order.append(Packed(indices))
            defaults.append(None)
            param_types.append(T.Tuple(tuple(T.widen(types[i]) for i in indices)))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named = t.cast(dict[str, int], value)
            order.append(Packed(tuple(named.values()), tuple(named)))
            defaults.append(None)
            items = T.join_all(T.widen(types[i]) for i in named.values())
            param_types.append(T.Dict(T.STR, items) if named else T.typeof({}))
        elif name in passed:
            index = t.cast(int, value)
            order.append(index)
            defaults.append(None)
            param_types.append(T.widen(types[index]))
        else:
            value = runtime.given_default(value)
            order.append(None)
            defaults.append(CoDual(value, zero_fdata(value)))
            param_types.append(T.typeof(value))
        if order[-1] is not None or kind is inspect.Parameter.VAR_KEYWORD:
            slots.append(None)
        elif kind is inspect.Parameter.KEYWORD_ONLY:
            slots.append(("kw", name))
        else:
            slots.append(("pos", positional.index(name) - (len(positional) - n_defaults)))
    return tuple(order), tuple(defaults), tuple(param_types), tuple(slots)
