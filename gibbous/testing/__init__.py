"""Testing rules: ``test_rule(f, *args, ...)`` checks the rule for a call against everything a
rule must do, and raises ``RuleTestError`` naming the check that failed.  See docs/testing.md.

The checks: (a) correctness against finite differences, (b) the interface of the tangent
model, (c) reuse of the rule for repeated and nested calls, (d) mutation and restoration of
arguments, (e) calls after the first (state reused, other shapes), (f) allocations of warm
calls (with ``perf="allocs"``).
"""

from gibbous.testing.allocations import Allocations as Allocations
from gibbous.testing.cases import RuleCase as RuleCase
from gibbous.testing.cases import RuleTestErrors as RuleTestErrors
from gibbous.testing.cases import case as case
from gibbous.testing.cases import parametrize as parametrize
from gibbous.testing.cases import test_rules_for as test_rules_for
from gibbous.testing.errors import CHECKS as CHECKS
from gibbous.testing.errors import RuleTestError as RuleTestError
from gibbous.testing.checks import RuleTestReport as RuleTestReport
from gibbous.testing.harness import test_rule as test_rule
