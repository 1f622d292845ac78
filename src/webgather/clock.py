"""The only place that reads the system clock.

Pure code takes ``now`` as a value; the shells get it from a :class:`Clock`.
:class:`FakeClock` moves only when told (trio's MockClock idea), for tests.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "FakeClock", "SystemClock"]


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (scheduling)."""
        ...

    def wall(self) -> float:
        """Seconds since the epoch (records, WARC dates)."""
        ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()


class FakeClock:
    """A clock that moves only on :meth:`advance`."""

    def __init__(self, start_wall: float = 1_700_000_000.0) -> None:
        self._mono = 0.0
        self._wall = start_wall

    def monotonic(self) -> float:
        return self._mono

    def wall(self) -> float:
        return self._wall + self._mono

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._mono += seconds
