"""Re-crawl cycles of a cluster crawl: the crawl-wide cycle, each node's part of it, the rows of buckets.

Crawl-wide, in the coordinator: the counter ``recrawl.cycle`` is the number of
the latest cycle and its :class:`~webgather.cluster.definition.CycleSpec`
(re-crawl settings, start time, continuous or not) is stored beside the
crawl's definition. A cycle is one *run* of the cluster crawl: it starts when
:func:`~webgather.runtime.launch.cluster.start_cycle` raises ``runs`` (after the spec is stored, so a node that
sees the run sees its cycle) and ends when the coordinating node raises
``done`` to ``runs`` (every node idle, no batch in transit). So all nodes
agree on when a cycle starts and ends, and a node that joins mid-cycle is
simply one more node of that run. :func:`~webgather.runtime.launch.cluster.start_cycle` run again while a cycle
is unfinished (``runs > done``: its starter was killed) resumes that cycle with
its stored settings instead of starting another.

Per node, :class:`NodeCycle` (``DIR/nodes/<node>/state/urls.sqlite``):

* *open*: the state gets the node's host -> bucket step (``Frontier.bucket_for``)
  so each row knows its bucket; a node directory crawled without re-crawl state
  is imported from its crawl log first (:mod:`webgather.recrawl.bootstrap`).
  Rows of buckets the node does not own (a plain crawl with joins and leaves
  fetched them here) are handed to their owners at start, with the
  frontier's orphan buckets (:class:`RowStore` is what the bucket keeper moves);
* *begin* (after the first table is adopted): plan the revisits of the URLs in
  the buckets owned *now*, within the node's share of the cycle's budget
  (:func:`~webgather.recrawl.policy.apportion` by buckets owned: every node
  computes the same split from the same table), unless this node planned the
  cycle already (a restart continues it, like a one-node cycle);
* the node crawls with :class:`~webgather.recrawl.hooks.RecrawlHooks`; the
  fetches themselves are limited crawl-wide by
  :class:`~webgather.runtime.member.budget.CycleBudget`;
* *finish*: when the run ended with ``done`` the local cycle is ``done``; the
  node's summary gets a ``recrawl`` section (its counters; the cluster's summary
  sums them, :func:`webgather.cluster.status.merge_recrawl`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from webgather.cluster.definition import CycleSpec
from webgather.cluster.mapping import BucketTable
from webgather.config import CrawlConfig, RecrawlConfig
from webgather.recrawl.bootstrap import import_crawl
from webgather.recrawl.policy import check_config
from webgather.recrawl.state import state_path
from webgather.runtime.cycle.steps import plan, queue, section
from webgather.recrawl.hooks import RecrawlHooks, RobotsReuse
from webgather.recrawl.observe import UrlRecord
from webgather.recrawl.policy import apportion
from webgather.recrawl.simhash import SimHashIndex
from webgather.recrawl.state import UrlState
from webgather.runtime.engine.parts import NodeParts
from webgather.urls import host_key

__all__ = ["NodeCycle", "RowStore", "cycle_config"]


def cycle_config(config: CrawlConfig, spec: CycleSpec) -> CrawlConfig:
    """The node's config with the cycle's re-crawl settings, without the crawl's ``max_pages``:
    that limits the crawl (its page permits are spent), a cycle's fetches are limited by its budget."""
    recrawl = RecrawlConfig(**{k: v for k, v in spec.recrawl.items()
                               if k in {f.name for f in dataclasses.fields(RecrawlConfig)}})
    check_config(recrawl)
    return dataclasses.replace(config, recrawl=recrawl, max_pages=None)


class RowStore:
    """A node's re-crawl rows as the bucket keeper moves them: export, merge (newest wins), drop.

    Opened when first needed (a node without re-crawl state that receives rows
    creates its state file then), so a plain cluster crawl opens nothing."""

    def __init__(self, path: Path, bucket_of: Callable[[str], int], state: UrlState | None = None,
                 index: SimHashIndex | None = None) -> None:
        self.path = path
        self.bucket_of = bucket_of
        self.index = index
        self._state = state
        self._owned = state is None

    def state(self, create: bool = False) -> UrlState | None:
        if self._state is None and (create or self.path.exists()):
            self._state = UrlState.open(self.path, self.bucket_of)
            self._state.fill_buckets()
        return self._state

    def buckets(self) -> list[int]:
        state = self.state()
        return [] if state is None else state.buckets()

    def export(self, bucket: int) -> list[UrlRecord]:
        state = self.state()
        return [] if state is None else state.export_rows(bucket)

    def merge(self, rows: Sequence[UrlRecord]) -> int:
        if not rows:
            return 0
        state = self.state(create=True)
        assert state is not None
        taken = state.merge_rows(rows)
        if self.index is not None:
            for row in rows:
                if row.simhash is not None and row.dead is None:
                    self.index.add(row.fp, row.simhash)
        return taken

    def drop(self, buckets: Iterable[int], rows: Iterable[UrlRecord] = ()) -> None:
        state = self.state()
        if state is None:
            return
        state.drop_rows(buckets)
        if self.index is not None:
            for row in rows:
                self.index.remove(row.fp)

    def close(self) -> None:
        if self._owned and self._state is not None:
            self._state.close()
            self._state = None


class NodeCycle:
    """One node's part of a cluster cycle (module docstring)."""

    def __init__(self, spec: CycleSpec, parts: NodeParts, state: UrlState, imported: int) -> None:
        self.spec = spec
        self.parts = parts
        self.state = state
        self.imported = imported
        cfg = parts.config
        robots = RobotsReuse(cfg.robots.ttl_s, cfg.fetch.user_agent, cfg.robots.max_bytes, parts.clock.wall)
        self.hooks = RecrawlHooks(state, parts.writer.writer, cfg.recrawl, spec.cycle, robots)
        self.rows = RowStore(state.path, state.bucket_of or _no_bucket, state, self.hooks.index)
        self.planned = 0

    @classmethod
    def open(cls, spec: CycleSpec, parts: NodeParts) -> NodeCycle:
        """Open the node's state (importing its crawl log if it has none) with its bucket step."""
        frontier = parts.frontier
        state = UrlState.open(state_path(parts.out_dir), lambda url: frontier.bucket_for(host_key(url)))
        state.fill_buckets()
        return cls(spec, parts, state, import_crawl(state, parts.out_dir))

    def begin(self, table: BucketTable | None, owned: set[int]) -> None:
        """Plan this cycle's revisits for ``owned`` buckets, or continue the cycle planned before a restart."""
        state, parts, cfg, number = self.state, self.parts, self.parts.config.recrawl, self.spec.cycle
        last = state.last_cycle()
        if last is not None and last.id == number:
            if last.status == "planned":
                if parts.frontier.pending() < last.queued_before + last.planned:  # killed before the queueing
                    queue(parts, [r for r in state.pending_records(number) if self.rows.bucket_of(r.url) in owned])
                state.set_cycle_status(number, "running")
            self.planned = last.planned
            return
        if parts.frontier.pending() == 0:
            state.clear_pending()  # marks of revisits that never ran (dropped hosts, a bucket started empty)
        row = plan(state, parts, cfg, number, budget=self.node_budget(table), buckets=owned)
        queue(parts, state.pending_records(number))
        state.set_cycle_status(number, "running")
        self.planned = row.planned

    def node_budget(self, table: BucketTable | None) -> int | None:
        """This node's share of the cycle's budget, by buckets owned in ``table``."""
        budget = self.parts.config.recrawl.budget_per_cycle
        if budget is None or table is None:
            return budget
        return apportion(budget, table.shares()).get(self.parts.node_id, 0)

    def finish(self, done: bool) -> dict[str, Any]:
        """End this node's run of the cycle (``done``: the cycle is over); its summary section."""
        state, number = self.state, self.spec.cycle
        if done:
            if self.parts.frontier.is_done():
                state.clear_pending()
            state.set_cycle_status(number, "done", self.parts.clock.wall())
        row = state.last_cycle()
        assert row is not None
        out = section(state, row, done, self.parts.clock.wall())
        out.update(budget=self.parts.config.recrawl.budget_per_cycle, planned_revisits=self.planned,
                   imported=self.imported, started_s=self.spec.started_s)
        return out

    def close(self) -> None:
        self.state.close()


def _no_bucket(url: str) -> int:
    return -1
