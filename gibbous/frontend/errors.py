"""The frontend's errors: a construct gibbous cannot differentiate, or a bug of its own.

Both name the function, the file and the line, so that the user can find the code at fault
without reading bytecode.
"""

from __future__ import annotations

from gibbous.ir.exceptions import GibbousError


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
