"""gibbous: reverse-mode automatic differentiation of plain Python + NumPy code, derived from
CPython bytecode through a typed SSA IR.  See README.md and docs/."""

from __future__ import annotations

import importlib
import typing as t

# The public names are loaded on first use (PEP 562): ``import gibbous.ir`` runs this module
# first, and the IR layer must not pay for the frontend, the rules and the passes.
if t.TYPE_CHECKING:
    from gibbous import testing as testing
    from gibbous.api import StaleRuleError as StaleRuleError
    from gibbous.api import build_rrule as build_rrule
    from gibbous.api import grad as grad
    from gibbous.api import value_and_gradient as value_and_gradient
    from gibbous.api import value_and_pullback as value_and_pullback
    from gibbous.forward import build_frule as build_frule
    from gibbous.forward import jvp as jvp
    from gibbous.rules.frules import frule as frule
    from gibbous.forward.second_order import build_hvp as build_hvp
    from gibbous.forward.second_order import hessian as hessian
    from gibbous.forward.second_order import hvp as hvp
    from gibbous.forward.second_order import jacobian as jacobian
    from gibbous.ir.exceptions import UnsupportedConstructError as UnsupportedConstructError
    from gibbous.prepared import PreparedGradient as PreparedGradient
    from gibbous.prepared import prepare_gradient as prepare_gradient
    from gibbous.rules.registry import DefaultContext as DefaultContext
    from gibbous.rules.registry import MinimalContext as MinimalContext
    from gibbous.rules.registry import MissingRuleError as MissingRuleError
    from gibbous.rules.registry import build_primitive_rrule as build_primitive_rrule
    from gibbous.rules.registry import primitive as primitive
    from gibbous.rules.registry import stateful_primitive as stateful_primitive
    from gibbous.rules.registry import zero_derivative as zero_derivative
    from gibbous.tangents.model import CoDual as CoDual
    from gibbous.tangents.model import NoTangent as NoTangent

# public name -> the module that defines it ("" for a submodule of the same name)
_LAZY = {
    "testing": "",
    "StaleRuleError": "gibbous.api",
    "build_rrule": "gibbous.api",
    "grad": "gibbous.api",
    "PreparedGradient": "gibbous.prepared",
    "prepare_gradient": "gibbous.prepared",
    "value_and_gradient": "gibbous.api",
    "value_and_pullback": "gibbous.api",
    "build_frule": "gibbous.forward",
    "jvp": "gibbous.forward",
    "frule": "gibbous.rules.frules",
    "build_hvp": "gibbous.forward.second_order",
    "hessian": "gibbous.forward.second_order",
    "hvp": "gibbous.forward.second_order",
    "jacobian": "gibbous.forward.second_order",
    "UnsupportedConstructError": "gibbous.ir.exceptions",
    "DefaultContext": "gibbous.rules.registry",
    "MinimalContext": "gibbous.rules.registry",
    "MissingRuleError": "gibbous.rules.registry",
    "build_primitive_rrule": "gibbous.rules.registry",
    "primitive": "gibbous.rules.registry",
    "stateful_primitive": "gibbous.rules.registry",
    "zero_derivative": "gibbous.rules.registry",
    "CoDual": "gibbous.tangents.model",
    "NoTangent": "gibbous.tangents.model",
}

__all__ = [*_LAZY, "__version__"]
__version__ = "0.1.0.dev0"


def __getattr__(name: str) -> object:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not home:
        return importlib.import_module(f"{__name__}.{name}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
