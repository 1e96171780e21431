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
    _add_note(e, f"  in {function}, {file}:{line}" + (f": {text}" if text else ""))


_REPEATED = re.compile(r"  \[the line above repeated (\d+) more times?\]$")


def _add_note(e: BaseException, note: str) -> None:
    """Add ``note``, collapsing repeats as Python's tracebacks do: deep recursion would
    otherwise leave one note per level."""
    notes: list[str] = getattr(e, "__notes__", [])
    if notes and notes[-1] == note:
        e.add_note("  [the line above repeated 1 more time]")
        return
    counted = _REPEATED.match(notes[-1]) if notes else None
    if counted is not None and len(notes) > 1 and notes[-2] == note:
        notes[-1] = f"  [the line above repeated {int(counted[1]) + 1} more times]"
        return
    e.add_note(note)
