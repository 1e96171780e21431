"""Looking inside: the IR of a function at each stage of the pipeline, the rule each call
site resolves to, the control-flow graph drawn, and what the library knows about a callable.

    >>> print(gibbous.inspect.code_ir(loss, W, x, stage="typed"))
    >>> print(gibbous.inspect.format_rule_table(gibbous.inspect.rule_table(loss, W, x)))
    >>> gibbous.inspect.render(gibbous.inspect.code_ir(loss, W, x), format="svg")
    >>> print(gibbous.inspect.format_facts(gibbous.inspect.facts(np.sin)))

The command line offers the same (``python -m gibbous ir|rules|facts``); see docs/inspect.md.
"""

from gibbous.inspect.facts import CallableFacts as CallableFacts
from gibbous.inspect.facts import facts as facts
from gibbous.inspect.facts import format_facts as format_facts
from gibbous.inspect.render import FORMATS as FORMATS
from gibbous.inspect.render import GraphvizNotFoundError as GraphvizNotFoundError
from gibbous.inspect.render import render as render
from gibbous.inspect.render import to_dot as to_dot
from gibbous.inspect.rules import RuleRow as RuleRow
from gibbous.inspect.rules import format_rule_table as format_rule_table
from gibbous.inspect.rules import rule_table as rule_table
from gibbous.inspect.stages import STAGES as STAGES
from gibbous.inspect.stages import code_ir as code_ir
