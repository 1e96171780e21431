"""How much NumPy memory a warm call allocates, temporaries included.

``tracemalloc`` traces NumPy's array buffers in a domain of their own
(``np.lib.tracemalloc_domain``), but it reports only two things: the blocks alive *now* (which
can be filtered by domain) and the peak of all domains together, Python objects included (which
a rule cannot avoid allocating: its pullback closure, the tuples it returns).  Neither shows a
temporary array that is freed before the call returns, nor an array allocated after an old
one was freed (a buffer re-allocated on every call: the memory in use never grows).

So ``measure`` samples.  While the measured call runs, a trace function (``sys.settrace``
with ``f_trace_opcodes``) reads the NumPy memory alive before every bytecode instruction of
every Python frame, and adds up every increase from one sample to the next: that sum is the
NumPy memory the call allocated.  Every intermediate array of a Python expression is alive on
the value stack at the next instruction (``np.add(a, b * s, out=a)`` holds ``b * s`` while
``np.add`` runs), and a buffer freed by one statement and allocated again by the next shows as
the increase it is.  What stays invisible is memory allocated and freed inside one C call
(NumPy's iterator buffers, a BLAS copy), the same for the primal as for a rule that calls the
same functions.

Details that make the numbers exact:

* the measured call runs after ``WARMUPS`` calls under the same trace function, so it is warm
  (states and caches exist), and CPython 3.12+ delivers opcode events only to code that has run
  once under the trace function;
* tracemalloc starts (unless it is already running) just before the warm-up calls: a sample
  reads few blocks and stays cheap, and what the measured call frees of the warm-up calls'
  memory counts (as it must: a buffer freed and allocated again is no increase in use);
* the garbage collector is off during the measured call: collecting old garbage could only
  lower the numbers, but finalizers run by it are not the call's doing;
* the sampler's own frames (and tracemalloc's) are not traced.

``all_domains_peak`` (a second run, without the sampler, whose own allocations would dominate
it) is tracemalloc's plain peak: reported for information, never checked.
"""

from __future__ import annotations

import collections
import gc
import sys
import tracemalloc
import types as pytypes
import typing as t

import attrs
import numpy as np

from gibbous.testing.errors import short_path

NUMPY = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
_DOMAIN = np.lib.tracemalloc_domain
# The raw traces (domain, size, traceback, ...): summing them is several times faster than
# filtering a Snapshot, and a sample is taken before every bytecode instruction.  The public
# API is the fallback, and gives the allocation sites.
_raw_traces = getattr(tracemalloc, "_get_traces", None)

Mark = t.Callable[[str], None]
_UNTRACED = (__name__, "tracemalloc")


_Block = tuple[int, tuple[tuple[str, int], ...]]  # size, traceback


def _numpy_blocks() -> list[_Block]:
    """The NumPy blocks alive now (of what tracemalloc traces)."""
    if _raw_traces is not None:
        return [(trace[1], trace[2]) for trace in _raw_traces() if trace[0] == _DOMAIN]
    snapshot = tracemalloc.take_snapshot().filter_traces(NUMPY)
    return [
        (trace.size, tuple((f.filename, f.lineno) for f in trace.traceback))
        for trace in snapshot.traces
    ]


@attrs.frozen
class Allocations:
    """What one warm call allocated, in bytes of NumPy memory."""

    allocated: int  # every increase of the NumPy memory in use, summed over the call
    peak: int  # the most in use at once, above what was in use before the call
    held: dict[str, int]  # in use (above the start) at the marks the call set
    held_at_end: int  # still in use when the call returned
    sites: tuple[str, ...]  # where the allocated blocks were allocated, the largest first
    all_domains_peak: int  # tracemalloc's own peak over all domains, Python objects included

    def describe(self) -> str:
        held = "".join(f", {v} in use {n}" for n, v in self.held.items())
        return f"{self.allocated} bytes allocated, peak {self.peak}{held}"


class _Sampler:
    def __init__(self) -> None:
        self.recording = False
        self.blocks: list[_Block] = []
        self.start_bytes = self.last = self.allocated = self.peak = 0
        self.sites: collections.Counter[str] = collections.Counter()
        self.held: dict[str, int] = {}

    def start(self) -> None:
        self.blocks = _numpy_blocks()
        self.start_bytes = self.last = sum(size for size, _ in self.blocks)
        self.allocated = self.peak = 0
        self.sites, self.held = collections.Counter(), {}
        self.recording = True

    def now(self) -> int:
        return sum(size for size, _ in _numpy_blocks()) - self.start_bytes

    def sample(self) -> None:
        if not self.recording:
            return
        blocks = _numpy_blocks()
        current = sum(size for size, _ in blocks)
        if current > self.last:
            self.allocated += current - self.last
            self.peak = max(self.peak, current - self.start_bytes)
            # The blocks new since the last sample (rare: a good rule never gets here).
            new = collections.Counter(blocks) - collections.Counter(self.blocks)
            for (size, traceback), n in new.items():
                where = f"{short_path(traceback[0][0])}:{traceback[0][1]}" if traceback else "?"
                self.sites[where] += size * n
        self.last = current
        self.blocks = blocks

    def mark(self, name: str) -> None:
        if self.recording:
            self.sample()
            self.held[name] = self.now()

    def trace_call(self, frame: pytypes.FrameType, event: str, arg: object) -> t.Any:
        if frame.f_globals.get("__name__") in _UNTRACED:  # ``mark`` and what it calls
            return None
        frame.f_trace_opcodes = True
        self.sample()
        return self.trace_local

    def trace_local(self, frame: pytypes.FrameType, event: str, arg: object) -> t.Any:
        self.sample()
        return self.trace_local


WARMUPS = 2
#: How often ``measure`` calls ``run``: the warm-up calls, the measured call, and one more
#: for the peak of all domains.
CALLS = WARMUPS + 2


def measure(run: t.Callable[[Mark], object]) -> Allocations:
    """The NumPy memory ``run(mark)`` allocates when warm (``run`` is called ``CALLS``
    times); ``mark(name)`` records what is in use at that point of the call."""
    sampler = _Sampler()
    previous = sys.gettrace()
    enabled = gc.isenabled()
    started = False
    try:
        if not tracemalloc.is_tracing():
            tracemalloc.start(1)
            started = True
        sys.settrace(sampler.trace_call)
        try:
            for _ in range(WARMUPS):
                run(sampler.mark)
            gc.disable()
            sampler.start()
            run(sampler.mark)
            sampler.sample()
            sampler.recording = False
        finally:
            sys.settrace(previous)
            if enabled:
                gc.enable()
        held_at_end = sampler.now()
        tracemalloc.reset_peak()
        current = tracemalloc.get_traced_memory()[0]
        run(lambda name: None)
        all_domains_peak = tracemalloc.get_traced_memory()[1] - current
    finally:
        if started:
            tracemalloc.stop()
    return Allocations(
        sampler.allocated,
        sampler.peak,
        sampler.held,
        held_at_end,
        tuple(f"{where} ({size} bytes)" for where, size in sampler.sites.most_common()),
        all_domains_peak,
    )
