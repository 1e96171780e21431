"""The user's source line behind an error raised inside a derived rule's forward program.

The generated programs end each line with a comment naming the user's ``file:line`` it
comes from (``gibbous.backends.numpy.source``), and their source is in ``linecache``.  An
exception out of a rule called by the forward program (a set refusing a number, a shape error
in NumPy) has a traceback through generated frames only; ``note_user_line`` adds the user's
line to it as a note (PEP 678), one per derived rule it passes, innermost first, so the error
reads as a traceback of the user's own code.
"""

from __future__ import annotations

import linecache
import re
import types as pytypes

__all__ = ["note_user_line"]

_WHERE = re.compile(r"#\s*(?P<file>.+):(?P<line>\d+)(?:-\d+)?\s*$")


def note_user_line(e: BaseException, code: pytypes.CodeType, function: str) -> None:
    """Note on ``e`` the user's line of ``function`` where the frame of ``code`` (a forward
    program) was when ``e`` passed through it."""
    tb = e.__traceback__
    lineno = None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    if lineno is None:
        return
    match = _WHERE.search(linecache.getline(code.co_filename, lineno))
    if match is None:
        return
    file, line = match["file"], int(match["line"])
    text = linecache.getline(file, line).strip()
    e.add_note(f"  in {function}, {file}:{line}" + (f": {text}" if text else ""))
