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
backend, :func:`webgather.runtime.crawl.run_crawl`): same config, same output directory, and
running it again with the same ``out`` resumes it. Hooks: :mod:`webgather.runtime.page_hooks`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webgather.config import CrawlConfig, load
from webgather.errors import ConfigError
from webgather.runtime.page_hooks import ITEMS_FILE, HookFunctions, OnLink, OnPage
from webgather.seeds import read_seeds
from webgather.store.outdir import prepare_out_dir

__all__ = ["Crawl", "CrawlSummary"]


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
    """Items the hooks wrote in this run (0 without ``on_page``)."""
    out_dir: Path
    raw: dict[str, Any]

    @property
    def items_file(self) -> Path:
        """``DIR/items.jsonl``: one JSON object a line (created at the first item)."""
        return self.out_dir / ITEMS_FILE

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
    (:mod:`webgather.runtime.page_hooks`); instead of them, ``config.hooks`` may name a module.

    This runs one node in this process. Joining a Redis crawl or ``--workers N`` from the API is
    not built yet (use ``webgather crawl --workers N --hooks pkg.mod``: hooks given as a module
    reach every node; functions given here cannot cross to other processes).
    """

    def __init__(self, seeds: str | Iterable[str], *, out: str | os.PathLike[str] | None = None,
                 config: CrawlConfig | str | os.PathLike[str] | None = None,
                 on_page: OnPage | None = None, on_link: OnLink | None = None) -> None:
        self.config = _config_of(config, out)
        self.seeds = read_seeds([seeds] if isinstance(seeds, str) else list(seeds), allow_bare_hosts=True)
        if not self.seeds and not (Path(self.config.out_dir) / "seeds.txt").exists():
            raise ConfigError("a crawl needs at least one seed URL (or an out directory with a crawl to resume)")
        for name, hook in (("on_page", on_page), ("on_link", on_link)):
            if hook is not None and not callable(hook):
                raise ConfigError(f"{name} must be a function, not a {type(hook).__name__}")
        if (on_page is not None or on_link is not None) and self.config.hooks:
            raise ConfigError("hooks given twice: as functions and as the module setting hooks; give one")
        self.hooks = HookFunctions(on_page, on_link) if on_page is not None or on_link is not None else None

    def run(self) -> CrawlSummary:
        """Crawl until done (or Ctrl-C / SIGTERM: the state is kept, running again resumes) under uvloop,
        as ``webgather crawl`` does; must not be called from a running event loop (use :meth:`run_async`)."""
        import uvloop

        return uvloop.run(self.run_async())

    async def run_async(self) -> CrawlSummary:
        """:meth:`run` on the caller's running event loop."""
        from webgather.commands.crawl import check_seed_addresses
        from webgather.runtime.crawl import run_crawl

        check_seed_addresses(self.config, self.seeds)
        out = prepare_out_dir(self.config.out_dir)
        summary = await run_crawl(self.config, self.seeds, progress=False, hooks=self.hooks)
        return CrawlSummary.of(summary, out)


def _config_of(config: CrawlConfig | str | os.PathLike[str] | None, out: str | os.PathLike[str] | None) -> CrawlConfig:
    """The crawl's config: a ``CrawlConfig`` as given (``out`` replacing its ``out_dir``), else loaded
    as the command line loads it (file, then ``WEBGATHER_*``, then ``out``)."""
    if isinstance(config, CrawlConfig):
        return dataclasses.replace(config, out_dir=os.fspath(out)) if out is not None else config
    if config is not None and not isinstance(config, (str, os.PathLike)):
        raise ConfigError(f"config must be a CrawlConfig, a TOML file's path or None, not a {type(config).__name__}")
    return load(Path(config) if config is not None else None, None,
                {"out_dir": os.fspath(out) if out is not None else None})
