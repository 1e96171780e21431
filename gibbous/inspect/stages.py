"""``code_ir``: the IR of ``f`` specialised to example arguments, at a chosen stage.

Stages, in pipeline order:

* ``frontend``  — untyped IR as read from the bytecode (every value ``any``);
* ``typed``     — after type inference on the arguments' types;
* ``optimized`` — after the standard passes (or the ``passes`` given): what the AD pass takes;
* ``forward``, ``reverse`` — the two programs the AD pass makes of it;
* ``jvp`` — the forward-mode program ``build_frule`` makes of it (every float and float
  array argument with a tangent).

Each is exactly what ``gibbous.build_rrule(f, *args, **kwargs)`` builds and differentiates:
the same unwrapping of ``f`` (a bound method, a partial, ...), the same binding of the
arguments, the same pipeline (``gibbous.session.Session``), and the same IR of the callees type
inference looks into.
"""

from __future__ import annotations

import types as pytypes
import typing as t

from gibbous.entry import bind, unwrap
from gibbous.forward.programs import ProgramBuilder
from gibbous.ir.core import Function
from gibbous.ir.types import typeof
from gibbous.passes import Pass
from gibbous.forward.activity import tangent_carrying
from gibbous.rules.registry import DefaultContext, callable_name
from gibbous.session import STANDARD_PIPELINE as STANDARD_PIPELINE
from gibbous.session import Session, derivable

STAGES = ("frontend", "typed", "optimized", "forward", "reverse", "jvp")


def code_ir(
    f: t.Callable[..., object],
    *args: object,
    stage: str = "typed",
    passes: t.Sequence[Pass | str] | str | None = None,
    **kwargs: object,
) -> Function:
    """The IR of ``f`` for a call like ``f(*args, **kwargs)`` at ``stage`` (a fresh copy every
    call).  ``stage`` and ``passes`` are this function's own keywords."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; the stages are {', '.join(STAGES)}")
    call = unwrap(f, args, kwargs)
    target = call.target
    if not derivable(target):
        raise TypeError(
            f"code_ir shows the IR gibbous derives a rule from; {callable_name(target)} is not "
            "a Python function (its registered rule is used as it is)"
        )
    session = Session(DefaultContext, False, passes)
    if stage == "frontend":
        return session.primal_ir(target, (), stage)
    binding = bind(t.cast(pytypes.FunctionType, target), call.args, call.kwargs)
    types = tuple(map(typeof, binding.values))
    if stage in ("typed", "optimized"):
        return session.primal_ir(target, types, stage)
    if stage == "jvp":
        varied = tuple(map(tangent_carrying, types))
        made = ProgramBuilder(session).program(t.cast(pytypes.FunctionType, target), types, varied)
        return t.cast(Function, made.__gibbous_ir__)  # type: ignore[attr-defined]
    description = session.program(target, types).description
    return t.cast(Function, description.forward if stage == "forward" else description.reverse)
