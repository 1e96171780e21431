"""What the IR knows of exceptions: the handler edge of a ``guard`` gives the exception it
caught to ``caught()``, and gibbous's own errors are never caught by the code it runs.

``caught()`` has no meaning outside the code the backend generates, which writes it as the
variable its ``except`` clause bound; it may only be the first operation of a block entered
through handler edges alone (the verifier checks).  ``GibbousError`` marks the errors gibbous
raises about itself (a missing rule, a rule that broke its contract, a pullback out of order):
a user's ``except Exception:`` would otherwise swallow them and take a path Python would not.
"""

from __future__ import annotations


class GibbousError(Exception):
    """Base of the errors gibbous raises about differentiating, not about the user's values:
    generated code lets them through every ``except`` of the code it runs."""


def caught() -> BaseException:
    """The exception the handler edge into this block caught (only in generated code)."""
    raise RuntimeError("caught() is only meaningful in code gibbous generates for a guard")


def throw(exc: BaseException) -> None:
    """``raise exc`` as a call, so that a guard can catch it (a ``raise`` inside a ``try``)."""
    raise exc


__all__ = ["GibbousError", "caught", "throw"]
