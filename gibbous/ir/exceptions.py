"""What the IR knows of exceptions: the handler edge of a ``guard`` gives the exception it
caught to ``caught()``, and gibbous's own errors are never caught by the code it runs.

``caught()`` has no meaning outside the code the backend generates, which writes it as the
variable its ``except`` clause bound; it may only be the first operation of a block entered
through handler edges alone (the verifier checks).  ``GibbousError`` marks the errors gibbous
raises about itself (a missing rule, a rule that broke its contract, a pullback out of order):
a user's ``except Exception:`` would otherwise swallow them and take a path Python would not.
``UnsupportedConstructError`` names a construct gibbous cannot differentiate, with the function,
the file and the line, so that the user can find the code at fault without reading bytecode.
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


# --------------------------------------------------------------------------------------------
# Code gibbous cannot differentiate: the frontend's, and every layer's (any may find it)


class UnsupportedConstructError(GibbousError):
    """``function`` uses ``construct`` (e.g. "an async function") at ``file:line``.

    ``hint`` says what to write instead.
    """

    def __init__(self, construct: str, file: str, line: int, hint: str, function: str = "?"):
        self.construct = construct
        self.file = file
        self.line = line
        self.hint = hint
        self.function = function
        super().__init__(self._message())

    def _message(self) -> str:
        return (
            f"gibbous cannot differentiate {self.construct} "
            f"({self.file}:{self.line} in {self.function}): {self.hint}"
        )

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions pickle their args; ours has keyword-like fields instead.
        return (type(self), (self.construct, self.file, self.line, self.hint, self.function))


class FrontendInternalError(UnsupportedConstructError):
    """A bug in the frontend itself, reported like an unsupported construct.

    It subclasses ``UnsupportedConstructError`` so that callers who fall back to another
    method for unsupported code also survive our bugs; the message says it is ours.
    """

    def _message(self) -> str:
        return (
            f"gibbous's frontend failed on {self.function} ({self.file}:{self.line}): "
            f"{self.construct}. This is a bug in gibbous; please report it. {self.hint}"
        )


__all__ = [
    "FrontendInternalError", "GibbousError", "UnsupportedArgumentError",
    "UnsupportedConstructError", "caught", "throw",
]  # fmt: skip


class UnsupportedArgumentError(GibbousError, TypeError):
    """A rule called with an argument (an option) it does not take: gibbous's refusal, a
    ``TypeError`` as Python's own for an unexpected argument."""
