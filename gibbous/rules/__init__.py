"""Rules: the tangent model, the rule registry, stateful primitives, type rules and purity.

Importing this package registers every hand-written rule, whichever of its modules is
imported first: ``import gibbous`` no longer loads them all, so the package must.
"""

from gibbous.rules import call_adapters as call_adapters  # make_genexpr's rule
from gibbous.rules import derived as derived  # accum is pure
from gibbous.rules import forward_structure as forward_structure  # first: gibbous.rules.forward's
from gibbous.rules import forward_cells as forward_cells  # closures' forward rules
from gibbous.rules import forward_objects as forward_objects  # objects' forward rules
from gibbous.rules import forward_dicts as forward_dicts  # dicts' forward rules
from gibbous.rules import generators as generators  # the generator frame's rules
from gibbous.rules import inplace as inplace  # registers its rules
from gibbous.rules import prims as prims  # registers the primitive rules
