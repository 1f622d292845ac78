"""Live progress of a crawl: a rich panel on a terminal, else an INFO log line every few seconds.

Reads the node's stats and frontier; changes nothing. Pages/s is measured over
the last display interval, so it tracks the current rate, not the average.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from webgather.runtime.engine.stats import CrawlStats

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["Progress"]

log = logging.getLogger(__name__)

Snapshot = Callable[[], dict[str, int | float]]


class Progress:
    """Refreshes every ``interval_s`` until cancelled."""

    def __init__(self, stats: CrawlStats, frontier_stats: Snapshot, monotonic: Callable[[], float], *, interval_s: float = 0.5, enabled: bool = True) -> None:
        self._stats = stats
        self._frontier_stats = frontier_stats
        self._monotonic = monotonic
        self._interval_s = interval_s
        self._enabled = enabled
        self._last = (monotonic(), 0)

    async def run(self) -> None:
        if not self._enabled:
            return
        if not sys.stderr.isatty():
            await self._run_plain()
            return
        from rich.console import Console  # rich costs 3.5 MB of RSS: only when there is a terminal
        from rich.live import Live

        console = Console(stderr=True)

        with Live(self._table(), console=console, refresh_per_second=4, transient=True) as live:
            while True:
                await asyncio.sleep(self._interval_s)
                live.update(self._table())

    async def _run_plain(self) -> None:
        while True:
            await asyncio.sleep(max(self._interval_s, 5.0))
            log.info(self.line())

    def _rate(self) -> float:
        now, pages = self._monotonic(), self._stats.pages
        then, before = self._last
        self._last = (now, pages)
        return (pages - before) / (now - then) if now > then else 0.0

    def line(self) -> str:
        f = self._frontier_stats()
        errors = ", ".join(f"{k} {v}" for k, v in self._stats.errors.most_common(4)) or "none"
        return (
            f"pages {self._stats.pages}  {self._rate():.0f}/s  queued {int(f.get('queued', 0))}  "
            f"in flight {int(f.get('in_flight', 0))}  hosts ready {int(f.get('hosts_ready', 0))} "
            f"waiting {int(f.get('hosts_waiting', 0))}  errors: {errors}"
        )

    def _table(self) -> Table:
        from rich.table import Table

        f = self._frontier_stats()
        s = self._stats
        table = Table(title="webgather", show_header=False, expand=False)
        table.add_row("pages", f"{s.pages:,}", "pages/s", f"{self._rate():,.0f}")
        table.add_row("queued", f"{int(f.get('queued', 0)):,}", "in flight", f"{int(f.get('in_flight', 0)):,}")
        table.add_row("hosts ready", f"{int(f.get('hosts_ready', 0)):,}", "hosts waiting", f"{int(f.get('hosts_waiting', 0)):,}")
        table.add_row("MB received", f"{s.bytes_received / 1e6:,.1f}", "retries", f"{s.retries:,}")
        errors = ", ".join(f"{k} {v}" for k, v in s.errors.most_common(5)) or "none"
        table.add_row("errors", errors, "", "")
        return table
