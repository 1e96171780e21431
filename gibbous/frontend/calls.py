"""Names, attributes and calls in the SSA builder, and the functions a body makes
(MAKE_FUNCTION and its attributes)."""

from __future__ import annotations

import builtins
import sys
import types
import typing as t

from gibbous.frontend import checks
from gibbous.frontend import ops as O
from gibbous.frontend.entries import Null, Pending, constant_value
from gibbous.ir import runtime
from gibbous.ir.core import Constant, Value

if t.TYPE_CHECKING:
    from gibbous.frontend.build import FunctionBuilder


def load_global(fb: FunctionBuilder, name: str) -> None:
    # Globals and builtins are frozen when the IR is built (see docs/frontend.md).
    scope: t.Mapping[str, object] = fb.fn.__globals__
    if name not in scope:
        scope = t.cast(t.Mapping[str, object], getattr(fb.fn, "__builtins__"))
        if not isinstance(scope, dict):  # pragma: no cover - a module in odd embeddings
            scope = vars(scope)
    if name in scope:
        fb.push(fb.const(scope[name], name))
    else:
        fb.push_call(runtime.name_error, name)


def import_name(fb: FunctionBuilder, name: str) -> None:
    # A module imported already is a constant, as a global is (importing it again runs
    # nothing); one that is not is imported when the code gets there (``if "jax" in
    # sys.modules: import jax``: never, where jax was not imported).
    fromlist, level = fb.pop_value(), fb.pop_value()
    package = fb.fn.__globals__.get("__package__")
    if isinstance(fromlist, Constant) and isinstance(level, Constant):
        found = runtime.imported(name, fromlist.value, t.cast(int, level.value), package)
        if found is not None:
            fb.push(fb.const(found, name))
            return
    fb.push_call(runtime.import_name, name, fromlist, level, package)


def import_from(fb: FunctionBuilder, name: str) -> None:
    module = fb.pop_value()
    fb.push(module)
    if isinstance(module, Constant) and isinstance(module.value, types.ModuleType):
        found = getattr(module.value, name, None)
        if found is None:
            found = sys.modules.get(f"{module.value.__name__}.{name}")
        if found is not None:
            fb.push(fb.const(found, name))
            return
    fb.push_call(runtime.import_from, module, name)


def load_attr(fb: FunctionBuilder, name: str) -> None:
    obj = fb.pop_value()
    if isinstance(obj, Constant) and isinstance(obj.value, types.ModuleType):
        # Attributes of modules are frozen with the module: np.sin is a constant.
        try:
            attr = getattr(obj.value, name)
        except Exception:
            pass  # let it fail at run time, where the user expects it
        else:
            fb.push(fb.const(attr, f"{obj.value.__name__}.{name}"))
            return
    fb.push_call(builtins.getattr, obj, name)


def pop_callee(fb: FunctionBuilder, args: list[Value]) -> Value:
    """Pop the two call slots; the callable, with ``self`` put in front of ``args``."""
    upper, lower = fb.pop(), fb.pop()
    if isinstance(lower, Null):
        return fb.value(upper)
    if isinstance(upper, Null):
        return fb.value(lower)
    args.insert(0, fb.value(upper))  # a method and its self
    return fb.value(lower)


def emit_call(fb: FunctionBuilder, argc: int, kw: bool) -> None:
    kwnames = t.cast(tuple[str, ...], constant_value(fb.pop_value())) if kw else ()
    args = fb.pop_values(argc)
    callee = pop_callee(fb, args)
    npos = len(args) - len(kwnames)
    if isinstance(callee, Constant) and callee.value is builtins.locals and not args:
        fb.push(_locals(fb))
        return
    if isinstance(callee, Constant) and callee.value is builtins.super and not args:
        args = super_arguments(fb)  # (none where Python would refuse too: checked below)
        npos = len(args)
    if isinstance(callee, Constant):
        checks.check_callee(fb.fn, fb.line, callee.value, len(args))
    fb.push_call(callee, *args[:npos], kwargs=dict(zip(kwnames, args[npos:])))


def super_arguments(fb: FunctionBuilder) -> list[Value]:
    """What ``super()`` without arguments passes: the class the method is defined in (its
    ``__class__`` cell) and the method's first argument, as it is now (Python reads the
    frame; the IR has the values).  None where there are none (not a method, or ``*args``
    first): Python raises "super(): no arguments" there, and so does the check."""
    code = fb.code
    if "__class__" not in code.co_freevars or not code.co_argcount:
        return []
    try:  # (filled when the class statement ended, long before any rule is built)
        cell = (fb.fn.__closure__ or ())[code.co_freevars.index("__class__")]
        cls: Value = fb.const(cell.cell_contents, "__class__")
    except (IndexError, ValueError):  # (an empty cell: Python raises "super(): empty")
        return []
    first = code.co_varnames[0]
    own = fb.locals.get(first)
    if own is None or not isinstance(own, Value):
        return []
    if first in code.co_cellvars:  # (captured by a nested function: in its cell)
        own = fb.call(runtime.cell_get, own, first)
    return [cls, own]


def super_attr(fb: FunctionBuilder, name: str, zero_args: bool) -> None:
    """``super(cls, obj).name`` (3.12+): as the call of ``super`` and the attribute read 3.11
    makes of it, ``cls`` the constant class of the ``__class__`` cell for ``super()``."""
    obj, cls, callee = fb.pop_value(), fb.pop_value(), fb.pop_value()
    if zero_args:
        found = super_arguments(fb)
        cls = found[0] if found else cls
    fb.push(fb.call(callee, cls, obj))
    load_attr(fb, name)


def _locals(fb: FunctionBuilder) -> Value:
    """``locals()``: a dict of the locals bound here (CPython 3.13's snapshot)."""
    code = fb.code
    if code.co_cellvars or code.co_freevars:
        raise fb.unsupported(
            "a call of locals() in a function with closure cells",
            "pass the values you need explicitly",
        )
    pairs: list[Value] = []
    for name in code.co_varnames:
        value = fb.locals.get(name, fb.unbound)
        if value is not fb.unbound:
            pairs += [fb.const(name), value]
    return fb.call(runtime.make_locals, *pairs, name=fb.hint)


def made_function(fb: FunctionBuilder, k: int) -> None:
    # The function is made once its last attribute is set, where the source defines it.
    ops = fb.analysis.ops
    if k + 1 >= len(ops) or not isinstance(ops[k + 1].op, O.SetFunctionAttribute):
        fb.peek_value(1)


def make_function(fb: FunctionBuilder, p: Pending) -> Value:
    code = constant_value(p.code)
    assert isinstance(code, types.CodeType)
    saved, fb.b.loc = fb.b.loc, p.loc
    none = fb.const(None)
    closure = p.attributes.get(8, none)
    if checks.is_genexpr(code):
        made = fb.call(runtime.make_genexpr, p.code, fb.owner(), closure)
    else:
        kwargs = {"annotations": p.attributes[4]} if 4 in p.attributes else None
        made = fb.call(
            runtime.make_function, p.code, fb.owner(), p.attributes.get(1, none),
            p.attributes.get(2, none), closure, kwargs=kwargs,
            name=code.co_name if code.co_name.isidentifier() else None,
        )
    fb.b.loc = saved
    for k, entry in enumerate(fb.stack):
        if entry is p:
            fb.stack[k] = made
    return made
