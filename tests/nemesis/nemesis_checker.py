"""The nemesis's checker: the invariants one schedule's crawl must keep, judged from what survived. Pure.

* **No loss**: every URL of the web's closure (those the expected crawl gets a response for) has a
  response record in a surviving WARC (the shared store, or a --out that was not deleted). A missing
  URL whose last logged attempt failed (a timeout on a loaded machine) is a *failed* fetch, recorded,
  not a loss; so is one the expected crawl reaches only through such a failed fetch (*cut off*: the
  page that links to it never came, so the crawl never learnt of it). The rest are *lost*.
* **The loss report is exact**: some node says ``DATA LOST`` iff a URL is lost (a loss nobody reports
  is silent; a DATA LOST with nothing lost is a false alarm).
* **Politeness**, from the test web server's own records (``fault_figures.politeness``): no two
  requests to one host at once, none closer than the delay (minus the server's stamping lag).
* **Refetches within the bound**: a page fetched twice must have been first fetched in a fault's
  window, from ``checkpoint_s + 2 s`` before the fault to 2 s after its heal (``checkpoint_s + 2 s``
  for store faults, whose failed checkpoints a later fault pays for), by the faulted node (by any node
  for Redis and store faults). Joins have no window: a hand-off moves a bucket's state.
* **It ends**: every process exits within the stated time after the last fault heals (else a hang),
  or exits non-zero with one line when it cannot go on; a crawl that every process left that way is
  *stopped*, not lost (its state is kept). A hung crawl's missing URLs are not counted as lost either:
  it never ended, the hang is its failure.
* **Exit codes as documented** (``webgather.exitcodes.ExitCode``): no undocumented code (a death by a
  signal is one, the nemesis's SIGTERM too: the table says SIGTERM stops a node with 0), no traceback,
  4 iff the run printed DATA LOST, 2 (a bad command line) never for the nemesis's good command lines, 0
  never after a loss. One death by a signal is documented: a SIGTERM in the interpreter's own start,
  before webgather's first line (``webgather._entry``) could answer it. Such a run printed nothing; a
  run that printed anything and then died by SIGTERM broke the table.
"""

from __future__ import annotations

import signal
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from fault_figures import gave_up, politeness

from webgather.exitcodes import ExitCode
from webgather.testweb.records import RequestRecord

WINDOW_MARGIN_S = 2.0
FINISHED = (ExitCode.DONE, ExitCode.DATA_LOST)


@dataclass(frozen=True)
class RunFacts:
    node: str
    index: int
    code: int | None
    killed: bool
    output: str
    last: bool
    """The node's last run (its exit code is the node's final word)."""

    @property
    def said_lost(self) -> bool:
        return "DATA LOST" in self.output

    def name(self) -> str:
        return f"{self.node}.{self.index}"


@dataclass(frozen=True)
class Window:
    node: str | None
    """The faulted node; None: any node (Redis and store faults)."""
    start: float
    end: float
    """Wall-clock seconds."""


@dataclass
class Facts:
    closure: set[str]
    archived: set[str]
    entries: list[dict[str, Any]]
    """Every crawl-log line of every node (surviving --out directories, and copies of lost ones)."""
    runs: list[RunFacts]
    records: list[RequestRecord]
    delay_s: float
    windows: list[Window]
    hung: list[str]
    problems: list[str] = field(default_factory=list)
    links: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The expected crawl's graph: each URL's links and redirect target."""
    roots: frozenset[str] = frozenset()
    """The expected crawl's seeds."""


@dataclass
class Verdict:
    closure: int = 0
    missing: int = 0
    failed: int = 0
    cut_off: int = 0
    lost: int = 0
    said_lost: bool = False
    stopped: bool = False
    hangs: int = 0
    at_once: int = 0
    short_gaps: int = 0
    resends: int = 0
    refetched: int = 0
    outside_bound: int = 0
    exit_problems: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @property
    def false_alarm(self) -> bool:
        """DATA LOST printed although every closure URL was archived (or its fetch recorded as failed)."""
        return self.said_lost and self.missing == self.failed + self.cut_off

    @property
    def silent_loss(self) -> bool:
        return self.lost > 0 and not self.said_lost

    @property
    def politeness(self) -> int:
        return self.at_once + self.short_gaps

    @property
    def ok(self) -> bool:
        return not (self.lost or self.false_alarm or self.hangs or self.politeness or self.outside_bound
                    or self.exit_problems)

    def failures(self) -> list[str]:
        named = [("lost", self.lost), ("false DATA LOST", int(self.false_alarm)), ("hangs", self.hangs),
                 ("politeness", self.politeness), ("refetches outside bound", self.outside_bound),
                 ("exit codes", len(self.exit_problems))]
        return [f"{name} {n}" for name, n in named if n]


def check(facts: Facts) -> Verdict:
    v = Verdict(hangs=len(facts.hung) + len(facts.problems))
    v.details += [f"hung at the deadline: {name}" for name in facts.hung] + facts.problems
    last = [r for r in facts.runs if r.last and not r.killed]
    v.stopped = bool(last) and not any(r.code in FINISHED for r in last)
    _losses(facts, v)
    _manners(facts, v)
    _refetches(facts, v)
    _exits(facts, v)
    return v


def final_fetches(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if not e.get("retry") and e.get("kind") in ("page", "sitemap")
            and e.get("error") not in ("robots", "robots_unavailable", "off_scope")]


def _reach(links: dict[str, tuple[str, ...]], roots: frozenset[str], blocked: set[str]) -> set[str]:
    seen, todo = set(roots), list(roots)
    while todo:
        url = todo.pop()
        if url in blocked:
            continue
        for nxt in links.get(url, ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _cut_off(facts: Facts, failed: set[str]) -> set[str]:
    """URLs the expected crawl reaches, but only through a URL whose fetch failed in this one."""
    if not facts.roots:
        return set()
    return _reach(facts.links, facts.roots, set()) - _reach(facts.links, facts.roots, failed)


def _losses(facts: Facts, v: Verdict) -> None:
    missing = facts.closure - facts.archived
    last_error: dict[str, Any] = {}
    for entry in final_fetches(facts.entries):
        last_error[entry["url"]] = entry.get("error")
    failed = {u for u in missing if last_error.get(u)}
    cut_off = (missing - failed) & _cut_off(facts, {u for u, error in last_error.items() if error})
    v.closure, v.missing, v.failed, v.cut_off = len(facts.closure), len(missing), len(failed), len(cut_off)
    failed |= cut_off
    unfinished = v.stopped or bool(facts.hung)  # the crawl did not end by itself: its hang is the failure
    v.lost = 0 if unfinished else len(missing - failed)
    if unfinished and missing - failed:
        v.details.append(f"{len(missing - failed)} closure URLs not archived when the crawl "
                         + ("stopped" if v.stopped else "was stopped at the deadline"))
    v.said_lost = any(r.said_lost for r in facts.runs)
    if v.lost:
        never = sorted(u for u in missing - failed if u not in last_error)
        v.details.append(f"lost {v.lost} URLs ({len(never)} never attempted in a surviving log), e.g. "
                         + ", ".join(sorted(missing - failed)[:3]))
    if v.false_alarm:
        v.details.append("DATA LOST printed by " + ", ".join(r.name() for r in facts.runs if r.said_lost)
                         + " with every closure URL archived or recorded as failed")
    if v.silent_loss:
        v.details.append("the loss was silent: no node printed DATA LOST")


def _manners(facts: Facts, v: Verdict) -> None:
    manners = politeness(facts.records, facts.delay_s, gave_up(facts.entries))
    v.at_once, v.short_gaps, v.resends = manners.at_once, manners.short_gaps, manners.resends
    if manners.at_once or manners.short_gaps:
        v.details.append("politeness: " + "; ".join(manners.examples))


def _refetches(facts: Facts, v: Verdict) -> None:
    fetches: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for entry in final_fetches(facts.entries):
        fetches[entry["url"]].append((float(entry.get("fetched_at") or 0.0), str(entry.get("node", ""))))
    twice = {url: sorted(times) for url, times in fetches.items() if len(times) > 1}
    v.refetched = len(twice)
    outside = [url for url, times in twice.items() if not _excused(times[0], facts.windows)]
    v.outside_bound = len(outside)
    if outside:
        v.details.append(f"{len(outside)} of {len(twice)} refetches outside every fault window, e.g. "
                         + ", ".join(f"{u} (first by {twice[u][0][1]} at {twice[u][0][0]:.1f})" for u in outside[:3]))


def _excused(first: tuple[float, str], windows: list[Window]) -> bool:
    at, node = first
    return any(w.start <= at <= w.end and (w.node is None or w.node == node) for w in windows)


def _exits(facts: Facts, v: Verdict) -> None:
    documented = {int(c) for c in ExitCode}
    for run in facts.runs:
        if run.killed or run.code is None:
            continue
        name, code = run.name(), run.code
        if code == -signal.SIGTERM and not run.output.strip():
            continue  # ended by SIGTERM in the interpreter's start, before any line of webgather ran
        if code not in documented:
            v.exit_problems.append(f"{name} exited {code}: not in the table of exit codes")
        if code == ExitCode.USAGE:
            v.exit_problems.append(f"{name} exited 2 (a bad command line) on a good one")
        if code == ExitCode.DATA_LOST and not run.said_lost:
            v.exit_problems.append(f"{name} exited 4 without a DATA LOST line")
        if code == ExitCode.DONE and run.said_lost:
            v.exit_problems.append(f"{name} printed DATA LOST and exited 0")
        if code == ExitCode.DONE and run.last and v.lost:
            v.exit_problems.append(f"{name} exited 0 although {v.lost} URLs were lost")
        if "Traceback (most recent call last)" in run.output:
            v.exit_problems.append(f"{name} printed a traceback (exit {code})")
    v.details += v.exit_problems
