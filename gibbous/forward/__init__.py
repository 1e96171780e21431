"""Forward mode: ``build_frule`` and ``jvp`` (``entry``), the forward-mode transform
(``transform``, ``activity``, ``calls``, ``generators``, ``quicker``), the programs of one build
and the callees found at run time (``programs``, ``dynamic``, ``binders``, ``primitive``,
``frames``), and second order (``second_order``: ``hvp``, ``build_hvp``, ``hessian``,
``jacobian``).  This face re-exports the entry's public names."""

from gibbous.forward.entry import ForwardModeError as ForwardModeError
from gibbous.forward.entry import ForwardRule as ForwardRule
from gibbous.forward.entry import build_frule as build_frule
from gibbous.forward.entry import jvp as jvp

__all__ = ["ForwardModeError", "ForwardRule", "build_frule", "jvp"]
