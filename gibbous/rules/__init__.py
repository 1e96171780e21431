"""Rules: the tangent model, the rule registry, stateful primitives, type rules and purity.

Importing this package registers the hand-written rules (``inplace`` so far).
"""

from gibbous.rules import inplace as inplace  # registers its rules
from gibbous.rules import prims as prims  # registers the primitive rules
