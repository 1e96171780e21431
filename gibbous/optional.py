"""Rules for optional libraries, registered when the library is first in use; and gibbous's own
rules (``gibbous.library``), registered at the first lookup if nothing loaded them before.

Importing ``scipy.stats`` takes most of a second; gibbous should not charge that to users who
never call SciPy.  A program that calls a SciPy function has imported SciPy before gibbous
looks anything up for it, so the rules of an optional library are registered at the first
lookup (of a primitive, a type rule or purity) after the library appears in ``sys.modules``.
"""

from __future__ import annotations

import importlib
import sys

from gibbous.ir import purity

# library -> the module whose import registers its rules.  SciPy's by subpackage: a program
# that uses scipy.special alone does not pay for importing scipy.stats.
_PENDING: dict[str, str] = {
    f"scipy.{area}": f"gibbous.library.scipy.{area}" for area in ("special", "linalg", "stats", "signal", "interpolate")
}
_PENDING["scipy._lib._array_api"] = "gibbous.library.scipy.array_api"  # (every subpackage's dispatch)


_LIBRARY = "gibbous.library"  # (the one list of the rules loaded: at the first lookup)


def load() -> None:
    """Register gibbous's own rules, if no one has yet (a lookup through the SDK alone, before
    any build: ``gibbous.build_primitive_rrule(DefaultContext, np.sin, ...)``), and the rules
    of every optional library imported since the last call."""
    if _LIBRARY not in sys.modules:
        importlib.import_module(_LIBRARY)
    if not _PENDING:
        return
    for library in [name for name in _PENDING if name in sys.modules]:
        importlib.import_module(_PENDING.pop(library))


purity.add_lookup_hook(load)
