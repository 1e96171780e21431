"""The public API: derive a rule once, call it many times.

    rule = gibbous.build_rrule(loss, W, x)                 # for these argument types
    y, (dloss, dW, dx) = gibbous.value_and_gradient(rule, loss, W, x)

``build_rrule`` runs the pipeline: the frontend's IR, type inference on the arguments' types,
the standard passes, activity analysis, the AD pass and the NumPy backend, which compiles the
forward and reverse programs once.  Calls of other Python functions get derived rules of their
own, built in the same *session* (so a function called from several places, or recursively,
is compiled once); see docs/ad.md.
"""

from __future__ import annotations

import copy
import functools
import inspect
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.backends.numpy.adcodegen import compile_program
from gibbous.frontend import function_ir, runtime
from gibbous.frontend.errors import UnsupportedConstructError
from gibbous.ir import types as T
from gibbous.ir.core import Call, Constant, Function, Location
from gibbous.passes import Pass, PassManager
from gibbous.passes.activity import Activity, analyse, carries_rdata, is_precise
from gibbous.passes.ad import differentiate, prune_attribute_reads, slot_type_is_precise
from gibbous.passes.typeinfer import InferenceError, infer_types
from gibbous.rules.derived import (
    ConstructRule,
    class_methods,
    FrozenConstructRule,
    constructible,
    BoundRule,
    CheckedRule,
    DerivedRule,
    DynamicRule,
    FillSeed,
    GenexprRule,
    LazyDerivedRule,
    Packed,
    PrimalRule,
    Program,
    Source,
    fill_rdata,
    function_key,
    ir_parameters,
    rule_name,
)
from gibbous.rules.higher_order import rule_factory
from gibbous.rules.registry import (
    Context,
    DefaultContext,
    MissingRuleError,
    RRule,
    callable_name,
    is_primitive,
    lookup_rule,
)
from gibbous.rules.inline import InlineRule, find_inline
from gibbous.rules.prims.classes import TWINS, by_code, twin
from gibbous.rules.typerules import instance_type
from gibbous.rules.stateful import StatefulRRule
from gibbous.rules.tangents import (
    NO_TANGENT,
    CoDual,
    Tangent,
    fdata_of,
    frozen_fields,
    increment,
    rdata_of,
    tangent_from,
    zero_fdata,
    zero_fdatas,
    zeros_like,
)

STANDARD_PIPELINE: tuple[str, ...] = ("fold", "dce", "cse", "simplify-cfg")

Maker = t.Callable[[], t.Any]


def build_rrule(
    f: t.Callable[..., object],
    *args: object,
    ctx: Context | None = None,
    debug: bool = False,
    passes: t.Sequence[Pass | str] | str | None = None,
) -> DerivedRule:
    """The rule of ``f`` for arguments of the types of ``args``.

    ``rule(CoDual(f), *coduals) -> (CoDual(y), pullback)``; ``pullback(dy) -> (df, *dargs)``
    (rdata).  ``debug`` verifies the IR after every pass and checks stateful rules' results;
    ``passes`` replaces the standard pipeline (names or pass objects).
    """
    session = Session(ctx or DefaultContext, debug, passes)
    f, args = unbind(f, args)
    args = complete_arguments(f, args)
    return session.program(f, tuple(T.typeof(a) for a in args)).instantiate()


def unbind(f: object, args: tuple[object, ...]) -> tuple[t.Any, tuple[object, ...]]:
    """A bound method ``obj.method`` as its function with ``obj`` first: its rule is the
    function's (``value_and_gradient`` gives the gradient of the method as the tangent of a
    bound method, ``Tangent({"__self__": ..., "__func__": ...})``)."""
    if isinstance(f, pytypes.MethodType) and isinstance(f.__func__, pytypes.FunctionType):
        return f.__func__, (f.__self__, *args)
    return f, args


def complete_arguments(f: object, args: tuple[object, ...]) -> tuple[object, ...]:
    """``args`` followed by the values of the parameters left out: their defaults, and an
    empty tuple / dict for ``*args`` / ``**kwargs`` (a rule takes one value per parameter)."""
    if not isinstance(f, pytypes.FunctionType):
        return args
    names = ir_parameters(f)
    if len(args) >= len(names):
        return args
    parameters = inspect.signature(f).parameters
    rest: list[object] = []
    for name in names[len(args) :]:
        p = parameters[name]
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            rest.append(())
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            rest.append({})
        elif p.default is not inspect.Parameter.empty:
            rest.append(p.default)
        else:
            raise TypeError(
                f"{callable_name(f)}: no value for parameter {name!r}, which has no default "
                f"({len(args)} argument(s) given)"
            )
    return (*args, *rest)


# --------------------------------------------------------------------------------------------
# Calling rules


def value_and_gradient(
    rule: DerivedRule, f: t.Callable[..., object], *args: object
) -> tuple[t.Any, tuple[t.Any, ...]]:
    """``f(*args)`` and its gradient ``(df, *dargs)``: ``f`` must return a real scalar.

    Gradients have their argument's structure (a float for a float, an array for an array,
    tuples, lists, dicts of gradients, ``NoTangent()`` for what has none); ``df`` is the
    gradient with respect to the callable itself (arrays captured by a closure).
    """
    method, (f, args) = f, unbind(f, args)
    given = len(args)
    args = complete_arguments(f, args)
    y, pullback, fdatas = _forward(rule, f, args)
    value = y.primal
    if isinstance(value, (bool, int, np.integer)):
        seed: t.Any = NO_TANGENT
    elif isinstance(value, (float, np.floating)):
        seed = type(value)(1.0)
    else:
        raise TypeError(
            f"value_and_gradient needs a function returning a real scalar, but "
            f"{callable_name(f)} returned {type(value).__name__}; use value_and_pullback"
        )
    return value, _rebind(method, _gradients(pullback(seed), f, args, fdatas)[: 1 + given])


def value_and_pullback(
    rule: DerivedRule, ybar: object, f: t.Callable[..., object], *args: object
) -> tuple[t.Any, tuple[t.Any, ...]]:
    """``f(*args)`` and the pullback of the cotangent ``ybar`` (shaped like the result)."""
    method, (f, args) = f, unbind(f, args)
    given = len(args)
    args = complete_arguments(f, args)
    y, pullback, fdatas = _forward(rule, f, args)
    # The reverse pass undoes the forward pass's mutations, of the result too (a list it
    # appended to, an array it wrote): the value returned is the result as the forward pass
    # left it.
    value = _snapshot(y.primal)
    increment(y.fdata, fdata_of(ybar))  # an array's cotangent goes into its fdata
    grads = _gradients(pullback(rdata_of(ybar)), f, args, fdatas)[: 1 + given]
    return value, _rebind(method, grads)


def _rebind(f: object, grads: tuple[t.Any, ...]) -> tuple[t.Any, ...]:
    """For a bound method, ``(dfunc, dself, *dargs)`` as ``(dmethod, *dargs)``."""
    if not isinstance(f, pytypes.MethodType) or not isinstance(f.__func__, pytypes.FunctionType):
        return grads
    dfunc, dself, *rest = grads
    if dfunc is NO_TANGENT and dself is NO_TANGENT:
        return (NO_TANGENT, *rest)
    return (Tangent({"__self__": dself, "__func__": dfunc}), *rest)


def _snapshot(value: object) -> t.Any:
    """A copy of ``value`` that the reverse pass cannot change (immutables as they are)."""
    kind = type(value)
    if kind in _NUMBERS:
        return value
    if kind is np.ndarray:
        return t.cast(np.ndarray[t.Any, t.Any], value).copy()
    return copy.deepcopy(value)


def _forward(
    rule: DerivedRule, f: t.Callable[..., object], args: tuple[object, ...]
) -> tuple[CoDual[t.Any, t.Any], t.Callable[[t.Any], tuple[t.Any, ...]], tuple[t.Any, ...]]:
    _check_signature(rule, f, args)
    if rule.depth:  # a top-level call: whatever was pending is abandoned
        rule.reset()
    fdatas = _zero_fdatas(f, args)
    y, pullback = rule(CoDual(f, fdatas[0]), *map(CoDual, args, fdatas[1:]))
    return y, pullback, fdatas


def _zero_fdatas(f: object, args: tuple[object, ...]) -> tuple[t.Any, ...]:
    """``zero_fdatas(f, *args)``, quicker for the common case: a plain function and arguments
    that are numbers or arrays owning their memory (which cannot alias one another)."""
    if type(f) is not pytypes.FunctionType or f.__closure__ is not None:
        return zero_fdatas(f, *args)
    out: list[t.Any] = [NO_TANGENT]
    seen: set[int] = set()
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            array = t.cast(np.ndarray[t.Any, t.Any], a)
            if array.base is not None or id(a) in seen:
                return zero_fdatas(f, *args)
            seen.add(id(a))
            if array.dtype.kind not in "fc":
                out.append(NO_TANGENT)
            elif array.flags.c_contiguous:  # what np.zeros_like gives it, quicker
                out.append(zeros_like(array))
            else:
                out.append(np.zeros_like(array))
        elif kind in _NUMBERS:
            out.append(NO_TANGENT)
        else:
            return zero_fdatas(f, *args)
    return tuple(out)


_NUMBERS = (float, int, bool, complex, np.float64, np.float32, np.int64, type(None), str)


def _gradients(
    rdata: tuple[t.Any, ...], f: object, args: tuple[object, ...], fdatas: tuple[t.Any, ...]
) -> tuple[t.Any, ...]:
    if len(rdata) != len(fdatas):
        raise ValueError(f"a pullback returned {len(rdata)} rdata for {len(fdatas)} arguments")
    return tuple(map(_gradient, (f, *args), fdatas, rdata))


def _gradient(x: object, fdata: t.Any, rdata: t.Any) -> t.Any:
    kind = type(x)
    if kind is np.ndarray and rdata is NO_TANGENT:  # the common cases first
        return fdata
    if kind is float and type(rdata) is float:
        return rdata
    function = kind is pytypes.FunctionType
    plain_function = function and t.cast(pytypes.FunctionType, x).__closure__ is None
    if rdata is NO_TANGENT and fdata is NO_TANGENT and (kind is int or plain_function):
        return NO_TANGENT  # what tangent_from gives: ints and plain functions have no tangent
    return tangent_from(x, fdata, fill_rdata(x, rdata))


def _check_signature(rule: DerivedRule, f: object, args: tuple[object, ...]) -> None:
    if not isinstance(rule, DerivedRule):
        raise TypeError(f"expected a rule made by gibbous.build_rrule, got {rule!r}")
    if rule.fn is not f and (function_key(f) is None or function_key(f) != function_key(rule.fn)):
        raise TypeError(
            f"this rule was built for {callable_name(rule.fn)}, not {callable_name(f)}"
        )
    types = rule.arg_types
    accepts = rule.program.acceptors
    if len(args) != len(types) or not all(ok(a) for ok, a in zip(accepts, args)):
        from gibbous.ir.printer import format_type

        want = ", ".join(map(format_type, types))
        got = ", ".join(format_type(T.typeof(a)) for a in args)
        raise TypeError(
            f"the rule of {callable_name(f)} was built for arguments ({want}), "
            f"called with ({got}); build a rule for these types"
        )


def grad(f: t.Callable[..., object], argnums: int | tuple[int, ...] = 0) -> t.Callable[..., t.Any]:
    """``g(*args)``: the gradient of the real scalar ``f(*args)`` with respect to argument
    ``argnums`` (a tuple of gradients for a tuple of positions).  One rule per argument
    signature is built on first use and kept (in ``g.rules``)."""
    rules: dict[tuple[T.Type, ...], DerivedRule] = {}

    @functools.wraps(f)
    def gradient(*args: object) -> t.Any:
        key = tuple(T.typeof(a) for a in args)
        rule = rules.get(key)
        if rule is None:
            rule = rules[key] = build_rrule(f, *args)
        _, grads = value_and_gradient(rule, f, *args)
        if isinstance(argnums, tuple):
            return tuple(grads[1 + i] for i in argnums)
        return grads[1 + argnums]

    gradient.rules = rules  # type: ignore[attr-defined]
    return gradient


# --------------------------------------------------------------------------------------------
# Building: one session per build_rrule


def derivable(fn: object) -> t.TypeGuard[pytypes.FunctionType | runtime.GenexprFunction]:
    """Whether gibbous derives the rule of ``fn`` from its bytecode (when it has no rule).

    Python functions, except gibbous's own helpers and NumPy's: NumPy is a library of
    primitives, and a missing rule for one of its functions is better reported as such than
    by differentiating NumPy's internals."""
    if isinstance(fn, runtime.GenexprFunction):
        return True
    if not isinstance(fn, pytypes.FunctionType):
        return False
    module = fn.__module__ or ""
    if module == "gibbous.rules.prims.classes" and fn in TWINS.values():
        return True  # plain-Python twins of library functions, there to be derived
    return module != "numpy" and not module.startswith(("numpy.", *_INTERNAL))


# gibbous's own machinery; user-level code inside gibbous (the demo, examples) is derivable.
_INTERNAL = tuple(
    f"gibbous.{layer}" for layer in ("ir", "frontend", "rules", "passes", "backends", "api")
)


def _callee_ir(fn: object) -> Function | None:
    """For type inference: the IR of the user functions the code calls."""
    if not derivable(fn):
        return None
    try:
        return function_ir(fn)
    except UnsupportedConstructError:
        return None


@attrs.define(eq=False)
class Session:
    """The programs built for one ``build_rrule``, by function and argument types; also the
    resolver of its dynamic call sites (which may build more programs while running)."""

    ctx: Context
    debug: bool
    passes: t.Sequence[Pass | str] | str | None
    _programs: dict[tuple[object, ...], tuple[object, Program]] = attrs.field(factory=dict)
    _building: set[tuple[object, ...]] = attrs.field(factory=set)

    def key(self, fn: object, arg_types: tuple[T.Type, ...]) -> tuple[object, ...]:
        return (function_key(fn) or ("object", id(fn)), arg_types)

    def program(self, fn: object, arg_types: tuple[T.Type, ...]) -> Program:
        key = self.key(fn, arg_types)
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

    def _build(self, fn: object, arg_types: tuple[T.Type, ...]) -> Program:
        if not derivable(fn):
            raise TypeError(
                f"build_rrule derives rules of Python functions; {callable_name(fn)} is not "
                "one (write a rule for it with gibbous.primitive)"
            )
        untyped = function_ir(fn)
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
        pipeline = STANDARD_PIPELINE if self.passes is None else self.passes
        PassManager(pipeline, verify=self.debug).run(typed)
        prune_attribute_reads(typed)
        # The IR of a generator expression reads the cells of the function it wraps.
        activity = analyse(typed, fn.fn if isinstance(fn, runtime.GenexprFunction) else fn)
        ad = differentiate(
            typed,
            activity,
            lambda op: self.site(op, activity),
            inline=self.inline,
            verify=self.debug,
        )
        return compile_program(fn, arg_types, ad, typed)

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
        found = find_inline(fn, types, op.kwnames, op.type)
        if found is None or not is_primitive(self.ctx, fn, types, op.kwnames):
            return None
        registration = lookup_rule(self.ctx, fn, types, op.kwnames, loc=op.loc)
        library = registration.origin.startswith("gibbous.rules.")
        return found if library and registration.kind == "primitive" else None

    def _site(self, op: Call, activity: Activity) -> Maker:
        operands = op.operands
        types = tuple(v.type for v in operands[1:])
        callee = op.callee
        if isinstance(callee, Constant):
            fn = callee.value
            maker = self._primitive(fn, types, op.kwnames, op.loc)
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
        if isinstance(callee, Constant) and twin(callee.value) is not None:
            double = t.cast(pytypes.FunctionType, twin(callee.value))
            return self._derived(double, len(op.args), op.kwnames, types, op.loc)
        if isinstance(callee, Constant) and constructible(callee.value):
            return self._construct(callee.value, len(op.args), op.kwnames, types, op.loc)
        if isinstance(callee, Constant):
            fn = callee.value
            precise = all(map(is_precise, types))
            if derivable(fn) and precise:
                return self._derived(fn, len(op.args), op.kwnames, types, op.loc)
            if precise and not derivable(fn):
                raise MissingRuleError(fn, types, op.kwnames, ctx=self.ctx, loc=op.loc)
        ctx, kwnames, loc = self.ctx, op.kwnames, op.loc
        return lambda: DynamicRule(self, ctx, kwnames, loc)

    def _primitive(
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
        maker = self._primitive(callee, arg_types, kwnames, loc)
        factory = rule_factory(callee)
        if maker is None and factory is not None:
            return factory(self, self.ctx, loc)
        double = twin(callee)
        if maker is None and double is not None:
            maker = self._derived(double, len(arg_types) - len(kwnames), kwnames, arg_types, loc)
        if maker is None and constructible(callee):
            maker = self._construct(callee, len(arg_types) - len(kwnames), kwnames, arg_types, loc)
        if maker is None and derivable(callee):
            n = len(arg_types) - len(kwnames)
            maker = self._derived(callee, n, kwnames, arg_types, loc)
        return None if maker is None else t.cast(RRule, maker())


_PRIMAL = PrimalRule()


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
    signature = inspect.signature(fn)
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


__all__ = [
    "Session",
    "build_rrule",
    "derivable",
    "grad",
    "value_and_gradient",
    "value_and_pullback",
]
