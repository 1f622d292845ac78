"""The Python API: run a crawl from a program, with page hooks.

::

    import webgather

    def on_page(page):
        yield {"title": page.title, "h1": [n.text() for n in page.tree.css("h1")] if page.tree else []}

    crawl = webgather.Crawl(["https://example.org/"], out="crawl-out", on_page=on_page,
                            on_link=lambda url: "/private/" not in url)
    summary = crawl.run()          # blocking, under uvloop; or: await crawl.run_async()
    print(summary.pages, summary.items_file)

A :class:`Crawl` is the same crawl ``webgather crawl`` runs (one cluster node on the in-process
backend, :func:`webgather.runtime.launch.crawl.run_crawl`): same config, same output directory, and
running it again with the same ``out`` resumes it. Hooks: :mod:`webgather.runtime.engine.page_hooks`;
where items go (``items=``: JSON Lines, Parquet, an object): :mod:`webgather.runtime.engine.item_sinks`.
``workers=N`` runs what ``webgather crawl --workers N`` runs; ``redis=URL, crawl_id=NAME`` makes
this process a node of that Redis crawl, as ``webgather crawl --redis`` (with seeds) or
``webgather node`` (without) does. Node processes import their hooks: give ``hooks="pkg.mod"``, or
``on_page``/``on_link`` that are that module's own ``on_page``/``on_link``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webgather.config import CrawlConfig, layers, load
from webgather.config.checks import validate
from webgather.errors import ConfigError
from webgather.runtime.engine.item_sinks import ItemSink, check_items_format
from webgather.runtime.engine.page_hooks import ITEMS_FILE, HookFunctions, OnLink, OnPage, load_hooks
from webgather.seeds import read_seeds
from webgather.store.outdir import prepare_out_dir

__all__ = ["Crawl", "CrawlSummary", "ItemSink"]


@dataclass(frozen=True, slots=True)
class CrawlSummary:
    """What a run did: the headline figures, typed, and the whole ``summary.json`` as ``raw``."""

    pages: int
    """Pages (and sitemaps) fetched, over all runs of the crawl (a resume continues the count)."""
    finished: bool
    """The crawl ended with nothing left to fetch (False: stopped by a signal, a page limit, a failed write)."""
    pages_per_s: float
    wall_s: float
    status: dict[str, int]
    """Pages per HTTP status."""
    errors: dict[str, int]
    """Pages per crawl-log error kind (``hook_error`` included)."""
    items: int
    """Items the hooks wrote in this run (0 without ``on_page``; with workers, all workers' together)."""
    out_dir: Path
    raw: dict[str, Any]

    @property
    def items_file(self) -> Path:
        """Where a one-node crawl's items went: ``DIR/items.jsonl`` (created at the first item), or the
        ``items`` path (a Parquet one is a directory of part files). A cluster's: :attr:`items_files`."""
        found = (self.raw.get("hooks") or {}).get("items_file")
        return Path(found) if found and not str(found).startswith("<") else self.out_dir / ITEMS_FILE

    @property
    def items_files(self) -> dict[str, Path]:
        """With workers: each node's items file (node id -> path); {} for a one-node crawl."""
        found = (self.raw.get("hooks") or {}).get("items_files") or {}
        return {str(node): Path(path) for node, path in found.items()}

    @classmethod
    def of(cls, summary: dict[str, Any], out_dir: Path) -> CrawlSummary:
        return cls(
            pages=int(summary.get("pages") or 0), finished=bool(summary.get("finished")),
            pages_per_s=float(summary.get("pages_per_s") or 0.0), wall_s=float(summary.get("wall_s") or 0.0),
            status=dict(summary.get("status") or {}), errors=dict(summary.get("errors") or {}),
            items=int((summary.get("hooks") or {}).get("items", 0)), out_dir=out_dir, raw=summary,
        )


class Crawl:
    """A crawl from ``seeds`` into ``out``, with optional page hooks.

    ``seeds``: URLs (or ``@FILE`` with one a line, as on the command line); one-label hosts
    (``localhost``) are accepted. ``out``: the output directory (None: the config's ``out_dir``).
    ``config``: a :class:`~webgather.config.CrawlConfig`, the path of a TOML file, or None; a
    path or None is read as the command line reads it, over the defaults and under the
    ``WEBGATHER_*`` environment variables (:func:`webgather.config.load`); a ``CrawlConfig`` is
    taken as it is. ``on_page(page)`` / ``on_link(url)``: the hooks
    (:mod:`webgather.runtime.engine.page_hooks`); instead of them, ``hooks="pkg.mod"`` (or ``config.hooks.module``)
    names a module defining them. ``items``: where the items go: a ``.jsonl`` or ``.parquet`` path
    (``[hooks] items``), or an :class:`ItemSink` object (this process's node only).

    ``workers=N``: N node processes on this machine under an embedded Redis (``webgather crawl
    --workers N``); with ``redis`` too, under that Redis. ``redis=URL, crawl_id=NAME`` alone: this
    process is one node of that crawl; with seeds it starts the crawl (or adds them to it, with the
    same settings), without it joins the stored one (its settings, :attr:`config`'s per-node ones).
    Hooks then go by import path (module docstring); a lambda, closure or ``__main__`` function is
    refused. The summary: the whole crawl's with workers, this node's with ``redis`` alone.
    """

    def __init__(self, seeds: str | Iterable[str], *, out: str | os.PathLike[str] | None = None,
                 config: CrawlConfig | str | os.PathLike[str] | None = None,
                 on_page: OnPage | None = None, on_link: OnLink | None = None, hooks: str | None = None,
                 items: str | os.PathLike[str] | ItemSink | None = None, workers: int | None = None,
                 redis: str | None = None, crawl_id: str | None = None) -> None:
        self.workers, self.redis, self.crawl_id = _cluster_of(workers, redis, crawl_id)
        config, sink = _with_items(_config_of(config, out), items)
        for name, hook in (("on_page", on_page), ("on_link", on_link)):
            if hook is not None and not callable(hook):
                raise ConfigError(f"{name} must be a function, not a {type(hook).__name__}")
        functions = on_page is not None or on_link is not None
        if ((functions or hooks is not None) and config.hooks.module) or (functions and hooks is not None):
            raise ConfigError("hooks given twice: as functions and as the module setting hooks; give one")
        if self.workers or self.redis:  # node processes import their hooks
            hooks, functions = _module_of(on_page, on_link) or hooks, False
            on_page = on_link = None
            if self.workers and sink is not None:
                raise ConfigError("items: an object cannot reach worker processes; give a .jsonl or .parquet path")
        self.config = _validated(config, hooks)
        self.seeds = read_seeds([seeds] if isinstance(seeds, str) else list(seeds), allow_bare_hosts=True)
        joins = self.redis is not None and not self.workers and not self.seeds  # the stored crawl's settings
        if items is not None and not functions and not self.config.hooks.module and not joins:
            raise ConfigError("items given, but no hooks to make them: give on_page= or hooks='pkg.mod'")
        if not self.seeds and not joins and not (Path(self.config.out_dir) / "seeds.txt").exists():
            raise ConfigError("a crawl needs at least one seed URL (or an out directory with a crawl to resume)")
        self.hooks = HookFunctions(on_page, on_link, sink) if functions or sink is not None else None

    def run(self) -> CrawlSummary:
        """Crawl until done (or Ctrl-C / SIGTERM: the state is kept, running again resumes) under uvloop,
        as ``webgather crawl`` does; must not be called from a running event loop (use :meth:`run_async`)."""
        if self.workers:
            return self._run_workers()
        import uvloop

        return uvloop.run(self.run_async())

    async def run_async(self) -> CrawlSummary:
        """:meth:`run` on the caller's running event loop (with workers: in a thread, waiting for them)."""
        if self.workers:
            return await asyncio.to_thread(self._run_workers)
        from webgather.commands.crawl import check_seed_addresses

        check_seed_addresses(self.config, self.seeds)
        out = prepare_out_dir(self.config.out_dir)
        if self.redis is not None:
            return CrawlSummary.of(await self._run_redis_node(out), out)
        from webgather.runtime.launch.crawl import run_crawl

        summary = await run_crawl(self.config, self.seeds, progress=False, hooks=self.hooks)
        return CrawlSummary.of(summary, out)

    def _run_workers(self) -> CrawlSummary:
        from webgather.commands.crawl import check_seed_addresses
        from webgather.runtime.launch.workers import run_workers

        assert self.workers is not None
        check_seed_addresses(self.config, self.seeds)
        out = prepare_out_dir(self.config.out_dir)
        path = os.pathsep.join(p for p in [*sys.path, os.environ.get("PYTHONPATH", "")] if p)
        summary = run_workers(self.config, self.seeds, workers=self.workers, redis_url=self.redis, crawl=self.crawl_id,
                              node_args=["--concurrency", str(self.config.fetch.concurrency)],
                              env={"PYTHONPATH": path})  # the workers import what this process imports
        return CrawlSummary.of(summary, out)

    async def _run_redis_node(self, out: Path) -> dict[str, Any]:
        """This process as one node of the Redis crawl (``crawl --redis`` with seeds, ``node`` without)."""
        from webgather.commands.node import connect_crawl, default_node_id
        from webgather.config.local import local_of
        from webgather.runtime.launch.cluster import join_crawl, start_crawl
        from webgather.runtime.launch.start import launch_node, node_config

        assert self.redis is not None and self.crawl_id is not None
        config, node = self.config, default_node_id()
        backend = await connect_crawl(self.redis, self.crawl_id, config.cluster.n_buckets if self.seeds else None)
        try:
            if self.seeds:
                found = await start_crawl(backend, config, self.seeds, nodes=[node])
            else:
                found = await join_crawl(backend)
                _same_hooks(config, node_config(found, local_of(config), out=out))
            return await launch_node(backend, found, local_of(config), node_id=node, out=out, hooks=self.hooks)
        finally:
            await backend.aclose()


def _cluster_of(workers: int | None, redis: str | None, crawl_id: str | None) -> tuple[int | None, str | None, str | None]:
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ConfigError(f"workers must be a whole number >= 1, not {workers!r}")
    if redis is not None and not crawl_id:
        raise ConfigError("redis needs crawl_id (the name of the crawl in that Redis)")
    if crawl_id is not None and redis is None and not workers:
        raise ConfigError("crawl_id names a crawl in a Redis: give redis= too (or workers=N)")
    return workers, redis, crawl_id


def _with_items(config: CrawlConfig, items: str | os.PathLike[str] | ItemSink | None) -> tuple[CrawlConfig, ItemSink | None]:
    """``items`` as the ``hooks.items`` setting (a path) or as the object the node writes to."""
    if items is None:
        return config, None
    if isinstance(items, (str, os.PathLike)):
        return dataclasses.replace(config, hooks=dataclasses.replace(config.hooks, items=os.fspath(items))), None
    if not isinstance(items, ItemSink):
        raise ConfigError(f"items must be a .jsonl or .parquet path or an object with write(item) and close(), "
                          f"not a {type(items).__name__}")
    return config, items


def _validated(config: CrawlConfig, module: str | None) -> CrawlConfig:
    """The config with the hooks module given as an argument; checked as a loaded config is."""
    if module is not None:
        config = dataclasses.replace(config, hooks=dataclasses.replace(config.hooks, module=module))
    validate(config)
    if config.hooks.module:
        load_hooks(config.hooks.module)  # one line now, not in each node later
    if config.hooks.items:
        check_items_format(config.hooks.items)
    return config


def _module_of(on_page: OnPage | None, on_link: OnLink | None) -> str | None:
    """The module whose ``on_page``/``on_link`` are the functions given (what node processes import), or
    None if none are given; :class:`ConfigError` if no importable module has them under those names."""
    given = {name: fn for name, fn in (("on_page", on_page), ("on_link", on_link)) if fn is not None}
    modules: set[str] = set()
    for name, fn in given.items():
        module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
        if not module or module == "__main__" or "<" in qualname or "." in qualname:
            raise ConfigError(f"{name}: node processes import their hooks, and {qualname or fn!r} of {module} cannot "
                              "be imported: define it in a module on PYTHONPATH (or give hooks='pkg.mod')")
        try:
            found = getattr(importlib.import_module(module), qualname, None)
        except Exception as exc:  # the user's module: any error in it is theirs, in one line
            raise ConfigError(f"{name}: its module {module!r} cannot be imported: {type(exc).__name__}: {exc}") from None
        if found is not fn:
            raise ConfigError(f"{name}: {module}.{qualname} does not import as the function given")
        modules.add(str(module))
    if len(modules) > 1:
        raise ConfigError("on_page and on_link: node processes load both from one module; define them in one")
    if not modules:
        return None
    module = modules.pop()
    loaded = load_hooks(module)
    if (loaded.on_page, loaded.on_link) != (on_page, on_link):
        raise ConfigError(f"node processes load {module}'s on_page and on_link: pass exactly those "
                          f"(or give hooks={module!r})")
    return module


def _same_hooks(mine: CrawlConfig, joined: CrawlConfig) -> None:
    """Joining a crawl: its nodes run its hooks; other hooks given here would run on this node only."""
    if mine.hooks.module and mine.hooks.module != joined.hooks.module:
        raise ConfigError(f"this crawl's hooks are {joined.hooks.module!r}, not {mine.hooks.module!r}: every node "
                          "runs the crawl's own")


def _config_of(config: CrawlConfig | str | os.PathLike[str] | None, out: str | os.PathLike[str] | None) -> CrawlConfig:
    """The crawl's config: a ``CrawlConfig`` as given (``out`` replacing its ``out_dir``), else loaded
    as the command line loads it (file, then ``WEBGATHER_*``, then ``out``; over the stored settings
    of a crawl ``out`` holds, :func:`~webgather.commands.options.over_stored`)."""
    if isinstance(config, CrawlConfig):
        return dataclasses.replace(config, out_dir=os.fspath(out)) if out is not None else config
    if config is not None and not isinstance(config, (str, os.PathLike)):
        raise ConfigError(f"config must be a CrawlConfig, a TOML file's path or None, not a {type(config).__name__}")
    from webgather.cluster.definition import read_saved
    from webgather.commands.options import over_stored

    file, cli = Path(config) if config is not None else None, {"out_dir": os.fspath(out) if out is not None else None}
    loaded = load(file, None, cli)
    stored = read_saved(loaded.out_dir)  # a resume: the crawl's stored settings, as on the command line
    return loaded if stored is None else over_stored(stored, layers(file, None, cli), loaded.out_dir)
