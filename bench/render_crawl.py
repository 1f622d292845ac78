"""Pages/s of a crawl that renders script pages in headless Chromium against the same crawl without.

A synthetic web on loopback whose content pages insert their ``<a href>`` links with an inline script
(``script_link_share``), crawled once without rendering (script-only links are not followed) and once
rendering every page (``[render] include = ["."]``), each into a fresh directory, one node, the
crawl's own politeness. Prints pages fetched, rendered, seconds and pages/s of each run.

    .venv/bin/python bench/render_crawl.py [--hosts 4 --pages-per-host 50 --max-pages-at-once 2]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from webgather.config import RenderConfig
from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer


async def one_run(model: WebModel, server: TestWebServer, out: Path, render: RenderConfig | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    base = crawl_config_for(model.params)
    config = dataclasses.replace(base, out_dir=str(out), progress=False,
                                 fetch=dataclasses.replace(base.fetch,
                                                           resolve_file=str(server.write_resolve_file(out.parent / "r.txt"))))
    if render is not None:
        config = dataclasses.replace(config, render=render)
    started = time.perf_counter()
    await run_crawl(config, [server.home_url(0)])
    took_s = time.perf_counter() - started
    entries = [e for log in out.rglob("crawl.log.jsonl") for e in read_crawl_log(log) if e.get("kind") == "page"]
    html = sum(1 for e in entries if e.get("status") == 200 and e.get("content_type") == "text/html")
    errors = sum(1 for e in entries if str(e.get("error") or "").startswith("render"))
    label = "rendered" if render is not None else "plain"
    summary = json.loads((out / "summary.json").read_text())
    print(f"{label:8s} pages {len(entries):4d} (html 200: {html}, render errors: {errors}) in {took_s:6.1f} s: "
          f"{len(entries) / took_s:6.1f} pages/s; 99 % of pages by {summary['pages_99_s']} s, "
          f"last at {summary['last_page_s']} s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages-per-host", type=float, default=50.0)
    parser.add_argument("--share", type=float, default=0.5, help="script_link_share of the web")
    parser.add_argument("--max-pages-at-once", type=int, default=2)
    args = parser.parse_args()
    model = WebModel(WebParams.for_tests(
        n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host, script_link_share=args.share,
        sitemap_share=0.0, faults=FaultRates.none(), robots_mix=(("allow", 1.0),)))
    render = RenderConfig(include=(".",), max_pages=args.max_pages_at_once)
    with tempfile.TemporaryDirectory() as tmp:
        async with TestWebServer(model) as server:
            await one_run(model, server, Path(tmp) / "plain" / "out", None)
            await one_run(model, server, Path(tmp) / "rendered" / "out", render)


if __name__ == "__main__":
    asyncio.run(main())
