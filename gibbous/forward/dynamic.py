"""Calls whose callee is known only at run time (read from a closure's cell, passed as an
argument, a method of a value of unknown type): ``DynamicCalls`` finds the forward rule or
program when the callee and its argument types are first seen, and keeps a bounded number."""

from __future__ import annotations

import inspect
import types as pytypes
import typing as t

import numpy as np

from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.infer.implementations import forward_twin, implementation
from gibbous.forward.transform import ForwardModeError
from gibbous.forward.generators import frame_maker, generator_function
from gibbous.forward.activity import Default, bind_packed, bound
from gibbous.rules import frules
from gibbous.rules import inplace_forward
from gibbous.library.python.closures import ClosureTangent
from gibbous.rules.emit import ObjectTangent, user_class
from gibbous.tangents.classes import Machinery
from gibbous.rules.public_names import callable_name, entry_point_name, higher_order_hint
from gibbous.rules.call_adapters import Packed
from gibbous.reverse.derived import ir_parameters
from gibbous.reverse.dynamic_calls import function_key
from gibbous.rules.registry import MissingRuleError, has_no_derivative, lookup_rule, zero_derivative
from gibbous.forward.binders import binder, headless_binder, method_binder
from gibbous.forward.primitive import (
    _user_object, _wrapped, derivable_function, primitive_program, primitive_run,
)

if t.TYPE_CHECKING:
    from gibbous.forward.programs import ProgramBuilder


_KNOWN = 256  # callees a ``DynamicCalls`` keeps, the oldest dropped first


class DynamicCalls(Machinery):
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
        if type(callee) is pytypes.BuiltinMethodType and isinstance(callee.__self__, np.ufunc):
            # ``ufunc.reduce(...)`` of a ufunc found at run time (``_wrapreduction``'s): the
            # method of ``np.ufunc`` (its twin), with the ufunc first, as the build has it
            method = getattr(np.ufunc, callee.__name__)
            obj = (callee.__self__, *args)
            return self.call(method, None, obj, (None, *tangents), kwargs, dkwargs)
        if callee is dict.pop and 2 <= len(args) <= 3 and type(args[0]) is dict and not kwargs:
            # (``kwds.pop('axis', default)`` found at run time: the tangent taken out too)
            y = dict.pop(*args)
            dd = tangents[0]
            if dd is None:
                return y, None
            default = frules.like(args[2], tangents[2]) if len(args) == 3 else None
            return y, frules.like(y, dd.pop(args[1], default))
        if callee is np.ndarray.sort and args and type(args[0]) is np.ndarray:
            inplace_forward.sort_with_tangent(args[0], tangents[0], *args[1:], **kwargs)
            return None, None
        if isinstance(callee, np.ufunc) and callee.nout == 1 and _out_given(callee, args, kwargs):
            return self.ufunc_out(callee, args, tangents, kwargs, dkwargs)
        array_method = type(callee) is pytypes.BuiltinMethodType and isinstance(
            callee.__self__, (np.ndarray, np.generic)
        )  # (``x.searchsorted(v)`` with a tangent in v only: the method's own rule too)
        if (dcallee is not None or array_method) and type(callee) is pytypes.BuiltinMethodType:
            # ``S.transpose(...)`` of a value of a type the build could not tell: the method
            # of its type, with the object and its tangent (``dcallee``, from ``getattr``) first
            method = getattr(type(callee.__self__), callee.__name__)
            obj = (callee.__self__, *args)
            return self.call(method, None, obj, (dcallee, *tangents), kwargs, dkwargs)
        if _replace_method(callee) and not args:  # (a NamedTuple's: fields by keyword)
            replaced = {k: frules.like(v, dkwargs.get(k)) for k, v in kwargs.items()}
            y = callee(**kwargs)
            return y, (frules.like(y, None) if dcallee is None else dcallee(**replaced))
        if type(callee) is pytypes.MethodType and self._unbound(callee, args, kwargs):
            # ``scipy.stats.alpha.logpdf(x, a)``: a library object's method without a rule of
            # its own, as reverse mode takes it: the function, the object first (no tangent)
            fn, obj = callee.__func__, callee.__self__
            return self.call(fn, None, (obj, *args), (None, *tangents), kwargs, dkwargs)
        boxes = None
        if type(dcallee) is ClosureTangent:
            boxes = dcallee.cells
            if dcallee.defaults is not None or dcallee.kwdefaults is not None:
                kwargs, dkwargs = _explicit_defaults(callee, dcallee, args, kwargs, dkwargs)
        # (an int, a shape of ints: no derivative, whatever tangent a value of unknown type
        # carried here; ``x.reshape((n, 2))`` with ``n`` read from a cell)
        tangents = tuple(None if _tangentless_value(a) else d for a, d in zip(args, tangents))
        named = [None if _tangentless_value(v) else dkwargs.get(k) for k, v in kwargs.items()]
        varied = tuple(d is not None for d in (*tangents, *named))
        run = self.found(callee, args, kwargs, varied, boxes is not None)
        given = (*args, *kwargs.values(), *(d for d in (*tangents, *named) if d is not None))
        y, dy = run(*given) if boxes is None else run(_wrapped(callee), boxes, *given)
        return y, frules.like(y, None) if dy is None else dy

    def _keep(self, key: t.Any, entry: tuple[t.Any, t.Any]) -> None:
        """``known[key] = entry``, the oldest entry dropped first when full (a new closure per
        call must not grow it forever)."""
        if len(self.known) >= _KNOWN:
            del self.known[next(iter(self.known))]
        self.known[key] = entry

    def _unbound(self, callee: pytypes.MethodType, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> bool:
        """Whether ``callee``, a bound method of a Python function, is called as that function
        with its object first: where no rule is registered for the bound method itself (a
        rule for ``multivariate_normal.logpdf`` is), kept by the method's class and function
        (a bound method is made anew on each attribute read)."""
        key = ("unbound", type(callee.__self__), callee.__func__, len(args), tuple(kwargs))
        hit = self.known.get(key)
        if hit is None:
            types = tuple(run_type(a) for a in (*args, *kwargs.values()))
            try:
                registration = lookup_rule(self.builder.session.ctx, callee, types, tuple(kwargs))
            except (MissingRuleError, TypeError):
                registration = None
            plain = isinstance(callee.__func__, pytypes.FunctionType) and not _replace_method(callee)
            hit = self.known[key] = (None, _UNBIND if registration is None and plain else _KEEP)
        return hit[1] is _UNBIND

    def ufunc_out(
        self,
        ufunc: np.ufunc,
        args: tuple[t.Any, ...],
        tangents: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        dkwargs: dict[str, t.Any],
    ) -> tuple[t.Any, t.Any]:
        """``ufunc(*inputs, out)`` or ``ufunc(*inputs, out=z)`` of a ufunc found at run time
        (``np.less(x, y, z)``, ``np.arccosh(1.5, z)``): the plain call's tangent, from the
        operands before the write, then the write, then that tangent written into the output's
        tangent (an array beside it, which its other names see).  An output without one takes
        only a zero tangent (a comparison's, a constant's): its other names would miss any
        other."""
        nin = ufunc.nin
        if "out" in kwargs:
            out, dout = kwargs["out"], dkwargs.get("out")
            rest = {k: v for k, v in kwargs.items() if k != "out"}
            inputs, dinputs = args, tangents
        else:
            out, dout, rest, inputs, dinputs = args[nin], tangents[nin], kwargs, args[:nin], tangents[:nin]
        drest = {k: v for k, v in dkwargs.items() if k in rest}
        varied = any(
            d is not None and not _tangentless_value(a) for a, d in zip(inputs, dinputs)
        ) or any(v is not None for v in drest.values())
        dt = self.call(ufunc, None, inputs, dinputs, rest, drest)[1] if varied else None
        z = ufunc(*args, **kwargs)
        if type(dout) is np.ndarray and dout.shape == np.shape(z):
            if dt is None:
                dout.fill(0.0)
            else:
                np.copyto(dout, dt, casting="unsafe")
            return z, dout
        if dt is not None and np.any(dt):
            raise ForwardModeError(
                f"forward mode: {callable_name(ufunc)}, called through a value computed at run "
                "time, writes a value with a tangent into an array that has none of its own "
                "(an array the differentiated code did not get or make from an argument): its "
                "other names' tangents would miss the write"
            )
        return z, None

    def found(
        self,
        callee: t.Any,
        args: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        varied: tuple[bool, ...],
        closure: bool,
    ) -> t.Callable[..., t.Any]:
        """The forward rule or program of ``callee`` for these arguments (``_find``), kept."""
        types = tuple(run_type(a) for a in (*args, *kwargs.values()))
        # (a closure's program takes the function: closures made anew of one code share it)
        shared = function_key(callee) if closure else None
        key = (shared or id(callee), types, varied, tuple(kwargs), closure)
        hit = self.known.get(key)
        if hit is None or shared is None and hit[0] is not callee:
            found = self._find(callee, args, kwargs, types, varied, closure)
            hit = (callee if shared is None else None, found)
            self._keep(key, hit)
        return hit[1]

    def program(
        self,
        callee: t.Any,
        dcallee: t.Any,
        head: bool,
        kwnames: tuple[str, ...],
        varied: tuple[bool, ...],
        *values: t.Any,
    ) -> t.Callable[..., t.Any]:
        """For a program reverse mode differentiates (a Hessian-vector product's): the
        compiled forward program of ``callee(*args, **kwargs)`` (``values``: the positional
        arguments, then the keywords'), ``run([callee, dcallee,] *values, *tangents of the
        varied)``, with ``callee, dcallee`` first where the caller passes them (``head``: the
        build saw the callee with a tangent).  Reverse mode calls it as it calls any function
        found at run time, deriving its rule from the program's IR; what has no such program
        is refused."""
        n = len(values) - len(kwnames)
        args, kwargs = values[:n], dict(zip(kwnames, values[n:]))
        if dcallee is not None and _array_method(callee):
            return self._array_method_binder(callee, varied, args, kwargs)
        closure = _closure_taken(callee, dcallee)
        run = self.found(callee, args, kwargs, varied, closure)
        genexpr = isinstance(callee, runtime.GenexprFunction)  # (its program takes its ``fn``)
        if getattr(run, "__gibbous_ir__", None) is None or genexpr and closure:
            run = self._binder(callee, closure, varied, args, kwargs) or run  # (one in IR)
        if getattr(run, "__gibbous_ir__", None) is None:  # (a function reverse mode cannot read)
            raise _unreadable(callee, values)
        return self._headless(run, callee, varied, args, kwargs) if head and not closure else run

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

    def star_program(
        self, callee: t.Any, dcallee: t.Any, head: bool, *given: t.Any
    ) -> t.Callable[..., t.Any]:
        """``program`` for ``callee(*args, **kwargs)`` (``call_ex``; ``given``: ``args``, its
        tangent[, ``kwargs``, its tangent]): ``run([callee, dcallee,] *given)``, an IR binder
        (``gibbous.forward.binders``) that unpacks them and calls the callee's program."""
        args, dargs, kwargs, dkwargs = (*given, None, None)[:4]
        args = tuple(args)
        given = (None,) * len(args) if dargs is None else tuple(dargs)
        kw = dict(kwargs or {})
        named = dict(dkwargs or {})
        varied = tuple(
            d is not None and not _tangentless_value(a)
            for a, d in [*zip(args, given), *((v, named.get(k)) for k, v in kw.items())]
        )
        if dcallee is not None and _array_method(callee):
            return self._array_method_binder(callee, varied, args, kw, (dargs, kwargs, dkwargs))
        closure = _closure_taken(callee, dcallee)
        star = (dargs, kwargs, dkwargs)
        made = self._binder(callee, closure, varied, args, kw, star)
        if made is None:
            raise _unreadable(callee, (*args, *kw.values()))
        return self._headless(made, callee, varied, args, kw, star) if head and not closure else made

    def _headless(
        self,
        run: t.Callable[..., t.Any],
        callee: t.Any,
        varied: tuple[bool, ...],
        args: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        star: tuple[t.Any, t.Any, t.Any] | None = None,
    ) -> t.Callable[..., t.Any]:
        """``run`` taking the head ``callee, dcallee`` its caller passes and dropping it: the
        build saw the callee with a tangent, which it has not at run time (``xp.f``, ``xp`` a
        module the build could not tell); kept per program."""
        types = tuple(run_type(a) for a in (*args, *kwargs.values()))
        star_spec = _star_spec(args, kwargs, star)
        key = ("headless", id(run), types, varied, tuple(kwargs), star_spec)
        hit = self.known.get(key)
        if hit is not None and hit[0] is run:
            return hit[1]
        made = headless_binder(run, callable_name(callee).rsplit(".", 1)[-1], types, varied, star_spec)
        self._keep(key, (run, made))
        return made

    def _binder(
        self,
        callee: t.Any,
        closure: bool,
        varied: tuple[bool, ...],
        args: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        star: tuple[t.Any, t.Any, t.Any] | None = None,
    ) -> t.Callable[..., t.Any] | None:
        """The IR binder of this call (see ``star_program``; without ``star``, the program's
        calling convention with the operands bound), kept; None for a callee without one (a
        library function's tangent function)."""
        types = tuple(run_type(a) for a in (*args, *kwargs.values()))
        star_spec = _star_spec(args, kwargs, star)
        if type(callee) is pytypes.MethodType and not closure and self._unbound(callee, args, kwargs):
            return self._method_binder(callee, varied, args, kwargs, star_spec)
        shared = function_key(callee) if closure else None
        key = ("bind", shared or id(callee), types, varied, tuple(kwargs), closure, star_spec)
        hit = self.known.get(key)
        if hit is not None and (shared is not None or hit[0] is callee):
            return hit[1]
        made = self.found(callee, args, kwargs, varied, closure)  # (what it refuses, first)
        kwnames, n = tuple(kwargs), len(args)
        binding: list[int | Default | Packed] | None = None
        full_varied = varied
        plain = not generator_function(callee) and not isinstance(callee, runtime.GenexprFunction)
        code = self.builder.derived_code(callee, types, kwnames) if not closure else None
        target = callee if code is None or generator_function(code) else code
        if isinstance(target, pytypes.FunctionType) and derivable_function(target) and plain:
            # (a Python function, or the one a NumPy dispatcher without a rule calls)
            binding = bind_packed(target, n, kwnames)
            assert binding is not None  # (``found`` refused a call Python would refuse)
            if closure and any(isinstance(w, Default) for w in binding):
                raise ForwardModeError(
                    f"hvp: {callable_name(callee)}, a closure called through a value computed at "
                    "run time leaving a parameter to its default: pass it"
                )
            full_types, full_varied = bound(binding, types, varied)
            made = self.builder.program(target, full_types, full_varied, closure)
        if getattr(made, "__gibbous_ir__", None) is None:
            return None
        name = getattr(callee, "__name__", "callee")
        run = binder(
            made, name, binding, types, varied, full_varied,
            T.typeof(callee) if closure else None, star_spec,
            unwrap=closure and isinstance(callee, runtime.GenexprFunction),
        )  # fmt: skip
        self._keep(key, (callee if shared is None else None, run))
        return run

    def _method_binder(
        self,
        callee: pytypes.MethodType,
        varied: tuple[bool, ...],
        args: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        star: tuple[T.Type, T.Type, T.Type | None, T.Type | None, tuple[str, ...]] | None,
    ) -> t.Callable[..., t.Any] | None:
        """``_binder`` of a bound method called as its function (``_unbound``): the object a
        constant of the binder, the rest bound as the call binds them; kept per object."""
        fn, obj = t.cast(pytypes.FunctionType, callee.__func__), callee.__self__
        types = tuple(run_type(a) for a in (*args, *kwargs.values()))
        key = ("bind method", id(obj), fn, types, varied, tuple(kwargs), star)
        hit = self.known.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        binding = bind_packed(fn, len(args) + 1, tuple(kwargs))
        if binding is None or not derivable_function(fn) or generator_function(fn):
            return None
        if any(isinstance(w, Packed) and 0 in w.indices for w in binding):
            return None  # (``def f(*args)``: the object among the packed)
        full_types, full_varied = bound(binding, (T.typeof(obj), *types), (False, *varied))
        made = self.builder.program(fn, full_types, full_varied, False)
        moved: list[int | Default | Packed] = [
            Default(obj) if w == 0
            else w - 1 if isinstance(w, int)
            else Packed(tuple(i - 1 for i in w.indices), w.names) if isinstance(w, Packed)
            else w
            for w in binding
        ]  # fmt: skip
        run = binder(made, fn.__name__, moved, types, varied, full_varied, None, star)
        self._keep(key, (obj, run))
        return run

    def _array_method_binder(
        self,
        callee: pytypes.BuiltinMethodType,
        varied: tuple[bool, ...],
        args: tuple[t.Any, ...],
        kwargs: dict[str, t.Any],
        star: tuple[t.Any, t.Any, t.Any] | None = None,
    ) -> t.Callable[..., t.Any]:
        """``program`` of ``S.reshape(1)``, a bound method of an array of a type the build
        could not tell, whose tangent (the receiver's) the program's caller passes first: the
        method of the array's type, the receiver first and varied, as ``call`` unbinds it
        (``binders.method_binder``; ``star`` as ``_binder`` takes it); kept per type and
        method."""
        obj = callee.__self__
        method = getattr(type(obj), callee.__name__)
        types = tuple(run_type(a) for a in (*args, *kwargs.values()))
        star_spec = _star_spec(args, kwargs, star)
        key = (
            "bind array method", method, T.typeof(obj), types, varied, tuple(kwargs), star_spec,
        )  # fmt: skip
        hit = self.known.get(key)
        if hit is not None:
            return hit[1]
        receiver_varied = not _tangentless_value(obj)
        made = self.found(method, (obj, *args), kwargs, (receiver_varied, *varied), False)
        if getattr(made, "__gibbous_ir__", None) is None:
            raise _unreadable(callee, (*args, *kwargs.values()))
        run = method_binder(made, callee.__name__, types, varied, star_spec, receiver_varied)
        self._keep(key, (None, run))
        return run

    def in_place(self, fn: t.Any, x: t.Any, y: t.Any, dx: t.Any, dy: t.Any) -> tuple[t.Any, t.Any]:
        """``x += y`` (``fn``, an in-place operator) with ``x`` of a type the build could not
        tell (an attribute: ``p.vel += a * dt``): into a number, a new value and its tangent;
        into an array, the tangent of ``x op y`` from the operands before the write, then the
        write, then that tangent written into ``dx``, the array's tangent (an attribute's is
        kept in its object's tangent), so every name of the array sees both."""
        if type(x) is not np.ndarray:
            return self.call(fn, None, (x, y), (dx, dy), {}, {})
        if type(dx) is not np.ndarray or dx.shape != x.shape:
            raise ForwardModeError(
                f"forward mode: {callable_name(fn)} writes into an array here that has no "
                "tangent of its own (an array the differentiated code did not get or make from "
                "an argument): its other names' tangents would miss the write"
            )
        _, d = self.call(inplace_forward.IN_PLACE_OF[fn], None, (x, y), (dx, dy), {}, {})
        z = fn(x, y)
        np.copyto(dx, d)
        return z, dx

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
            if self.builder.reversible:  # (a program, which reverse mode reads: no tangent)
                return primitive_program(fn, types, kwnames, varied, _NO_TANGENT, T.ANY)
            return lambda *a: (fn(*a[:n], **dict(zip(kwnames, a[n:]))), None)
        try:
            registration = lookup_rule(self.builder.session.ctx, fn, types, kwnames)
        except (MissingRuleError, TypeError):
            registration = None
        if has_no_derivative(registration):
            if self.builder.reversible:  # (a program, which reverse mode reads: no tangent)
                result_type = T.typeof(fn(*args, **kwargs))
                return primitive_program(fn, types, kwnames, varied, _NO_TANGENT, result_type)
            return lambda *a: (fn(*a[:n], **dict(zip(kwnames, a[n : len(types)]))), None)
        if any(varied[n:]) and not isinstance(fn, pytypes.FunctionType):
            raise ForwardModeError(
                f"forward mode: {callable_name(fn)}, called through a value computed at run "
                "time with a keyword argument that has a tangent: pass it by position"
            )
        made = self.builder.primitive(fn, types, kwnames, varied, None)
        if isinstance(made, frules.Emit):  # (its result's type, from the call at hand)
            result_type = T.typeof(fn(*args, **kwargs))
            return primitive_program(fn, types, kwnames, varied, made, result_type)
        if made is not None:
            return primitive_run(fn, made, types, kwnames, varied)
        # (a NumPy dispatcher without a rule, or with a reverse rule alone: the function it
        # calls, as where the callee is known when the rule is built)
        code = implementation(fn) if registration is None else self.builder.derived_code(fn, types, kwnames)
        code = code or forward_twin(fn, types, kwnames)
        if code is not None:
            fn = code
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
            # (an object with a tangent: its attributes' tangents are the caller's too; a
            # dict's, its values': ``kwds.update(d)``)
            written = frozenset(
                i for i in written
                if not (full_varied[i] and (
                    _user_object(full_types[i]) or isinstance(full_types[i], T.Dict)
                ))
            )  # fmt: skip
            if written:
                raise ForwardModeError(
                    f"forward mode: {callable_name(fn)}, called through a value computed at run "
                    f"time, writes into its argument {min(written)}: forward mode follows such "
                    "a write only where the callee is known when the rule is built (call it by "
                    "its module-level name)"
                )
            if binding == list(range(n)):
                return made
            return bound_run(fn, binding, n + len(kwnames), varied, full_varied, made, closure)
        if type(fn) is pytypes.MethodType and self._unbound(fn, args, kwargs):
            # (reached by ``program``, a Hessian-vector product's: ``call`` unbinds it first)
            obj = fn.__self__
            inner = self._find(
                fn.__func__, (obj, *args), kwargs, (T.typeof(obj), *types), (False, *varied)
            )
            return lambda *a: inner(obj, *a)
        raise ForwardModeError(
            f"forward mode: {callable_name(fn)}({', '.join(map(str, types))}), called through a "
            "value computed at run time, has no forward rule"
        )




def _UNBIND() -> None:
    """(``DynamicCalls._unbound``'s verdict, kept among the known callees: unbind)"""


def _KEEP() -> None:
    """(``DynamicCalls._unbound``'s verdict: call the bound method as it is)"""


_NO_TANGENT = frules.Emit(lambda b, z, args, dx, kwargs: frules.zero(b, z))  # (zeros)


def _star_spec(
    args: tuple[t.Any, ...], kwargs: dict[str, t.Any], star: tuple[t.Any, t.Any, t.Any] | None
) -> tuple[T.Type, T.Type, T.Type | None, T.Type | None, tuple[str, ...]] | None:
    """What a binder of ``f(*args, **kwargs)`` is built for (``star``: the tangents of
    ``args``, ``kwargs`` itself and its tangents): their types, and the keys."""
    if star is None:
        return None
    dargs, given, dgiven = star
    kw_types = (None, None) if given is None else (T.typeof(given), T.typeof(dgiven))
    return (T.typeof(args), T.typeof(dargs), *kw_types, tuple(kwargs))


def _array_method(callee: t.Any) -> bool:
    """A bound method of an array or a NumPy scalar (``x.reshape``), which ``call`` unbinds."""
    return type(callee) is pytypes.BuiltinMethodType and isinstance(
        callee.__self__, (np.ndarray, np.generic)
    )


def run_type(v: t.Any) -> T.Type:
    """The type a program found at run time is built for, of an argument: its value where it
    is a Python bool (a flag: ``_median(a, overwrite_input=False)``, whose write into ``a``
    the program then leaves out), else its type."""
    return T.Const(v) if type(v) is bool else T.typeof(v)


def _closure_taken(callee: t.Any, dcallee: t.Any) -> bool:
    """Whether a callee found at run time in a Hessian-vector product's program comes with its
    cells' tangents (a closure made there); refuses a tangent of any other kind."""
    if dcallee is None:
        return False
    genexpr = isinstance(callee, runtime.GenexprFunction)
    if type(dcallee) is not tuple or not (type(callee) is pytypes.FunctionType or genexpr):
        raise ForwardModeError(
            f"hvp: {callable_name(callee)}, called through a value computed at run time with a "
            "tangent of its own: only a function made over cells (a closure) is taken there"
        )
    return True


def _unreadable(callee: t.Any, values: tuple[t.Any, ...]) -> ForwardModeError:
    return ForwardModeError(
        f"hvp: {callable_name(callee)}({', '.join(type(a).__name__ for a in values)}), called "
        "through a value computed at run time: its forward rule is a function called at run "
        "time (a library function's tangent function, a call binding defaults, *args or "
        "**kwargs, a generator), which reverse mode cannot differentiate again; call it by its "
        "module-level name with its arguments by position"
    )


def _explicit_defaults(
    fn: pytypes.FunctionType,
    dfn: ClosureTangent,
    args: tuple[t.Any, ...],
    kwargs: dict[str, t.Any],
    dkwargs: dict[str, t.Any],
) -> tuple[dict[str, t.Any], dict[str, t.Any]]:
    """The keywords of a call of ``fn``, whose default values have tangents (``dfn``), with
    the defaults it leaves out passed by name with their tangents: what the call means, and
    what a forward program of ``fn`` bound with keywords takes."""
    try:
        given = inspect.signature(fn).bind(*args, **kwargs).arguments
    except TypeError:  # (Python's error, raised by the call itself)
        return kwargs, dkwargs
    kwargs, dkwargs = dict(kwargs), dict(dkwargs)
    code = fn.__code__
    names = code.co_varnames[: code.co_argcount]
    values = fn.__defaults__ or ()
    first = len(names) - len(values)
    for i, d in enumerate(dfn.defaults or ()):
        name = names[first + i]
        if d is not None and name not in given:
            if first + i < code.co_posonlyargcount:
                raise ForwardModeError(
                    f"forward mode: {callable_name(fn)}: the positional-only parameter {name!r} "
                    "has a default value with a tangent: pass the value as an argument"
                )
            kwargs[name], dkwargs[name] = values[i], d
    for name, d in (dfn.kwdefaults or {}).items():
        if d is not None and name not in given:
            kwargs[name], dkwargs[name] = (fn.__kwdefaults__ or {})[name], d
    return kwargs, dkwargs


def program_of(
    calls: DynamicCalls,
    callee: t.Any,
    dcallee: t.Any,
    head: bool,
    kwnames: tuple[str, ...],
    varied: tuple[bool, ...],
    *values: t.Any,
) -> t.Callable[..., t.Any]:
    """``calls.program(...)``: what a Hessian-vector product's program calls (a function of
    the callee and the arguments' types, without a derivative)."""
    return calls.program(callee, dcallee, head, kwnames, varied, *values)


runtime.register_object(program_of, "forward.program_of")
zero_derivative(program_of, ...)


def star_program_of(
    calls: DynamicCalls, callee: t.Any, dcallee: t.Any, head: bool, *given: t.Any
) -> t.Callable[..., t.Any]:
    """``calls.star_program(...)``: ``program_of`` for ``callee(*args, **kwargs)`` (``given``:
    ``args`` and its tangents, then ``kwargs`` and its, if the call has them)."""
    return calls.star_program(callee, dcallee, head, *given)


runtime.register_object(star_program_of, "forward.star_program_of")
zero_derivative(star_program_of, ...)


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
    given = [frules.like(a, d) if k in values else a for k, (a, d) in enumerate(zip(args, tangents))]
    y = method(*args)
    dy = dmethod(*given)
    return y, frules.like(y, dy) if name == "pop" else None


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


def _out_given(ufunc: np.ufunc, args: tuple[t.Any, ...], kwargs: dict[str, t.Any]) -> bool:
    """Whether a call of ``ufunc`` writes into an array given as its output."""
    if "out" in kwargs:
        return type(kwargs["out"]) is np.ndarray
    return len(args) == ufunc.nin + 1 and type(args[ufunc.nin]) is np.ndarray


def _tangentless_value(a: object) -> bool:
    """A value without a derivative: an int, a string, None, an array of ints or booleans (a
    mask), or a tuple of those (a shape)."""
    if type(a) is tuple:
        return all(map(_tangentless_value, a))
    if type(a) is np.ndarray:
        return a.dtype.kind in "biu"
    return a is None or isinstance(a, (bool, int, str, bytes, np.integer, np.bool_))


def bound_run(
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
                ds = [frules.like(a[k], d[k]) for k in w.indices]
                if w.names is None:
                    values.append(tuple(items))
                    tangents += [tuple(ds)] if v else []
                else:
                    values.append(dict(zip(w.names, items)))
                    tangents += [dict(zip(w.names, ds))] if v else []
        return made(*head, *values, *tangents)

    return run


