"""gibbous: reverse-mode automatic differentiation of plain Python + NumPy code, derived from
CPython bytecode through a typed SSA IR.  See README.md and docs/."""

from gibbous import testing as testing
from gibbous.api import build_rrule as build_rrule
from gibbous.api import StaleRuleError as StaleRuleError
from gibbous.api import grad as grad
from gibbous.api import value_and_gradient as value_and_gradient
from gibbous.api import value_and_pullback as value_and_pullback
from gibbous.frontend.errors import UnsupportedConstructError as UnsupportedConstructError
from gibbous.rules.registry import DefaultContext as DefaultContext
from gibbous.rules.registry import MinimalContext as MinimalContext
from gibbous.rules.registry import MissingRuleError as MissingRuleError
from gibbous.rules.registry import build_primitive_rrule as build_primitive_rrule
from gibbous.rules.registry import primitive as primitive
from gibbous.rules.registry import stateful_primitive as stateful_primitive
from gibbous.rules.registry import zero_derivative as zero_derivative
from gibbous.rules.tangents import CoDual as CoDual
from gibbous.rules.tangents import NoTangent as NoTangent

__version__ = "0.1.0.dev0"
