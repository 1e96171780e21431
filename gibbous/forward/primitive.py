"""One call's forward rule outside a derived program: a library function's tangent run beside
it (``primitive_run``) or written out and compiled with it (``primitive_program``); and what
gets a forward program of its own (``Programmed``)."""

from __future__ import annotations

import types as pytypes
import typing as t


from gibbous.backends.numpy.codegen import compile_function
from gibbous.ir import runtime
from gibbous.ir import types as T
from gibbous.ir.builder import Builder
from gibbous.ir.core import Constant, Function, Location
from gibbous.forward.transform import ForwardModeError, pair
from gibbous.rules import frules
from gibbous.rules.emit import user_class
from gibbous.rules.public_names import callable_name
from gibbous.session import derivable


def primitive_run(
    f: object,
    tangent: frules.Tangent,
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
    emit: frules.Emit,
    result_type: T.Type,
    tangent_only: bool = False,
) -> t.Callable[..., t.Any]:
    """``f(*args, **kwargs)`` and its tangent as a compiled program (a library function at
    the entry): ``run(*args, *kwarg_values, *tangents_of_varied) -> (y, dy)``, or ``dy``
    alone (``tangent_only``: the directional derivative a Hessian-vector product reads)."""
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
    dz = emit.fn(b, z, values[:n], tangents[:n] + tangents[n:], kwargs)
    b.ret(dz if tangent_only else pair(b, z, dz))
    return compile_function(ir)

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


_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async
