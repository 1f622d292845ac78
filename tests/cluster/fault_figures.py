"""Figures of a fault scenario, from the test web server's own request records and the crawl logs. Pure.

Used by durability_helpers.run_scenario (tests/cluster/test_shared_store_durability.py,
bench/durability.py, bench/cluster_faults.py).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from webgather.testweb.records import RequestRecord, per_key

ROBOTS_PATH = "/robots.txt"
SERVER_LAG_S = 0.1
"""The server stamps a request's end after writing the response; on a loaded machine the stamp can come
tens of ms late, so a gap it shows can be shorter than the one the crawler kept (see test_cluster_fencing)."""
RATE_WINDOW_S = 1.0
PRE_WINDOW_S = 5.0
DIP_HORIZON_S = 5.0
"""A dip under half the rate that starts later than this after the fault is the crawl's own tail."""
RATE_STEP_S = 0.1


@dataclass(frozen=True)
class Politeness:
    at_once: int
    """Pairs of successive requests to one host where the second started before the first ended."""
    short_gaps: int
    """Pairs where the second started less than the delay (minus SERVER_LAG_S) after the first ended."""
    resends: int = 0
    """Short gaps that are the native transport's one re-send of a GET on a new connection after a
    kept-alive one failed with no response byte (RFC 9112 section 9.3.1; issue 13, item 7): the same
    path again, on another connection, after a request the server reset unanswered. Counted apart from
    ``short_gaps``; a server that reset the request after reading it sees it twice."""
    examples: tuple[str, ...] = ()

    @property
    def violations(self) -> int:
        return self.at_once + self.short_gaps + self.resends


def gave_up(entries: Iterable[dict[str, Any]]) -> set[tuple[str, str]]:
    """(host, path) of requests the crawler timed out on: its politeness clock counts from its own
    timeout, while a server stalled on a loaded machine may still answer later (not a violation)."""
    return {(e["host"], e["url"].split(e["host"], 1)[1] or "/") for e in entries
            if e.get("error") == "timeout" and e.get("host")}


def politeness(records: Iterable[RequestRecord], delay_s: float, excused: set[tuple[str, str]]) -> Politeness:
    """Per host, successive requests (by start) that overlap or come closer than ``delay_s``."""
    at_once = short = resends = 0
    examples: list[str] = []
    for host, group in per_key(records, lambda r: r.host).items():
        for a, b in zip(group, group[1:]):
            if (a.host, a.path) in excused:
                continue
            gap_s = b.start_s - a.end_s
            if gap_s < 0:
                at_once += 1
            elif gap_s >= delay_s - SERVER_LAG_S:
                continue
            elif a.status is None and b.path == a.path and b.conn_id != a.conn_id:
                resends += 1
            else:
                short += 1
            if len(examples) < 4:
                examples.append(f"{host}: {a.path} (status {a.status}) then {b.path} {gap_s * 1000:.0f} ms after")
    return Politeness(at_once, short, resends, tuple(examples))


def recovery_s(records: Iterable[RequestRecord], fault_s: float) -> float:
    """Seconds from the fault (monotonic, the records' clock) until the crawl is back at half its
    pre-fault rate after the fault made it dip under half; 0 if it never did.

    Rate: page responses (every request but robots.txt, counted at its end) per second, over windows of
    RATE_WINDOW_S starting in steps of RATE_STEP_S from the fault. Pre-fault rate: the responses that
    ended in the PRE_WINDOW_S before the fault (or since the first request, if later), over that time
    (not since the start: a crawl's first seconds, one node alone, are unlike its steady state). Dip: the
    first window starting within DIP_HORIZON_S of the fault under half that rate (the crawl may go on at
    full rate for a moment after a fault: pages in flight, nodes that have not noticed yet). Back: the
    first window starting at or after the dip with at least half; the figure is its start minus the fault.
    Never back before the last response: the last response's end minus the fault."""
    pages = sorted(r.end_s for r in records if r.path != ROBOTS_PATH)
    starts = [r.start_s for r in records]
    if not pages or not starts or min(starts) >= fault_s:
        return 0.0
    since = max(min(starts), fault_s - PRE_WINDOW_S)
    pre_rate = (bisect.bisect_right(pages, fault_s) - bisect.bisect_left(pages, since)) / max(fault_s - since, 1e-9)
    need = pre_rate / 2 * RATE_WINDOW_S
    windows = [fault_s + k * RATE_STEP_S for k in range(max(0, int((pages[-1] - RATE_WINDOW_S - fault_s) / RATE_STEP_S) + 1))]

    def enough(s: float) -> bool:
        return bisect.bisect_left(pages, s + RATE_WINDOW_S) - bisect.bisect_left(pages, s) >= need

    dip = next((s for s in windows if s - fault_s <= DIP_HORIZON_S and not enough(s)), None)
    if dip is None:
        return 0.0
    back = next((s for s in windows if s >= dip and enough(s)), None)
    return back - fault_s if back is not None else max(pages[-1] - fault_s, 0.0)


def hosts_back_s(hosts: set[str], entries: Iterable[dict[str, Any]], fault_wall: float) -> float | None:
    """Seconds from the fault (wall clock) to the first request any node started after it to one of
    ``hosts`` (the victim's at the fault): how long they went unserved. None: never."""
    after = [float(e["fetched_at"]) for e in entries
             if e.get("host") in hosts and e.get("fetched_at") is not None and float(e["fetched_at"]) > fault_wall]
    return min(after) - fault_wall if after else None


def fetched_twice(entries: Iterable[dict[str, Any]]) -> set[str]:
    """URLs with more than one final fetch among ``entries`` (crawl-log lines of every node)."""
    counts = Counter(e["url"] for e in entries)
    return {url for url, n in counts.items() if n > 1}


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
