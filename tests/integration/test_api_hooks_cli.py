"""``webgather.Crawl(...).run()`` (blocking, TOML path + ``WEBGATHER_*``) and ``webgather crawl --hooks pkg.mod``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import webgather
from webgather.config import to_toml
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, final_entries, write_resolve

HOOKS_MODULE = '''
def on_page(page):
    heading = page.tree.css_first("h1") if page.tree is not None else None
    yield {"title": page.title, "h1": heading.text(strip=True) if heading is not None else None}


def on_link(url):
    return "/never/" not in url
'''


@contextlib.contextmanager
def _served_in_a_thread(model: WebModel) -> Iterator[TestWebServer]:
    """The synthetic web on its own loop in a thread, so the test's thread may call the blocking ``run()``."""
    ready, box = threading.Event(), {}

    async def serve() -> None:
        async with TestWebServer(model) as server:
            box.update(server=server, loop=asyncio.get_running_loop(), stop=asyncio.Event())
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the test web did not start"
    try:
        yield box["server"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(30)


def _toml(model: WebModel, server: TestWebServer, tmp_path: Path) -> Path:
    config = crawl_config(crawl_config_for(model.params), tmp_path / "elsewhere", write_resolve(server, tmp_path))
    path = tmp_path / "crawl.toml"
    path.write_text(to_toml(config))
    return path


def _items(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]


def _html_pages(out: Path) -> set[str]:
    return {e["url"] for e in final_entries(out) if e["kind"] == "page" and e["error"] is None
            and e["status"] == 200 and e.get("content_type") == "text/html"}


def test_run_blocks_reads_the_toml_and_the_environment_and_resumes(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    model = WebModel(WebParams.for_tests(n_hosts=3))
    with _served_in_a_thread(model) as server:
        toml = _toml(model, server, tmp_path)
        monkeypatch.setenv("WEBGATHER_MAX_PAGES", "7")
        first = webgather.Crawl(server.home_url(0), out=tmp_path / "out", config=toml,
                                on_page=lambda page: [{"title": page.title}]).run()
        assert isinstance(first, webgather.CrawlSummary)
        assert (first.pages, first.finished) == (7, False), "WEBGATHER_MAX_PAGES applies, as on the command line"
        monkeypatch.delenv("WEBGATHER_MAX_PAGES")
        again = webgather.Crawl([], out=tmp_path / "out", config=str(toml),
                                on_page=lambda page: [{"title": page.title}]).run()
    assert again.finished and again.pages > 7, "the same out resumes (seeds from DIR/seeds.txt)"
    assert not (tmp_path / "elsewhere").exists(), "out= replaces the file's out_dir"
    items = _items(tmp_path / "out")
    assert {i["page_url"] for i in items} == _html_pages(tmp_path / "out")
    assert len(items) == first.items + again.items


def _hooks_package(tmp_path: Path) -> Path:
    root = tmp_path / "modules"
    (root / "sitehooks").mkdir(parents=True)
    (root / "sitehooks" / "__init__.py").write_text("")
    (root / "sitehooks" / "extract.py").write_text(HOOKS_MODULE)
    return root


async def _webgather(*args: str, cwd: Path, pythonpath: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("WEBGATHER_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", *args, cwd=cwd,
        env={**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 180)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    return proc.returncode or 0, out.decode(), err.decode()


async def test_hooks_module_by_import_path_in_a_subprocess(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests(n_hosts=3))
    modules = _hooks_package(tmp_path)
    async with TestWebServer(model) as server:
        toml = _toml(model, server, tmp_path)
        code, out, err = await _webgather("crawl", server.home_url(0), "--config", str(toml), "--out", "out",
                                          "--no-progress", "--hooks", "sitehooks.extract", cwd=tmp_path,
                                          pythonpath=modules)
    assert code == 0, (out, err)
    items = _items(tmp_path / "out")
    assert len(items) > 5 and {i["page_url"] for i in items} == _html_pages(tmp_path / "out")
    assert all(i["h1"] == i["title"] for i in items)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["hooks"]["items"] == len(items)


async def test_a_hooks_module_that_cannot_be_imported_is_a_one_line_error(tmp_path: Path) -> None:
    modules = _hooks_package(tmp_path)
    (modules / "sitehooks" / "broken.py").write_text("import no_such_module_here\n")
    (modules / "sitehooks" / "empty.py").write_text("X = 1\n")
    for module, needle in (("sitehooks.missing", "cannot be imported: ModuleNotFoundError"),
                           ("sitehooks.broken", "cannot be imported: ModuleNotFoundError: No module named "
                                                "'no_such_module_here'"),
                           ("sitehooks.empty", "defines neither on_page nor on_link"),
                           ("not a module", "hooks.module must be a module's import path (pkg.mod), "
                                            "not 'not a module' (set by --hooks)")):
        code, out, err = await _webgather("crawl", "http://a.example/", "--out", "out", "--no-progress",
                                          "--hooks", module, cwd=tmp_path, pythonpath=modules)
        assert code == 2 and "Traceback" not in err and err.count("\n") == 1, (module, err)
        assert needle in err, err
        assert not (tmp_path / "out").exists(), "refused before the crawl starts"


@pytest.mark.slow
async def test_workers_load_the_hooks_module_from_the_crawl_definition(tmp_path: Path) -> None:
    """``crawl --workers 2 --hooks pkg.mod``: the workers get no --hooks; the stored definition carries it."""
    model = WebModel(WebParams.for_tests(n_hosts=6))
    modules = _hooks_package(tmp_path)
    async with TestWebServer(model) as server:
        toml = _toml(model, server, tmp_path)
        code, out, err = await _webgather("crawl", server.home_url(0), "--config", str(toml), "--out", "out",
                                          "--no-progress", "--pin-cpu", "off", "--workers", "2",
                                          "--hooks", "sitehooks.extract", cwd=tmp_path, pythonpath=modules)
    assert code == 0, (out, err)
    nodes = sorted((tmp_path / "out" / "nodes").iterdir())
    assert [d.name for d in nodes] == ["w0", "w1"]
    for node in nodes:  # each worker loaded the module (a worker may own no host of a small web: no items)
        hooks = json.loads((node / "summary.json").read_text())["hooks"]
        items = _items(node) if (node / "items.jsonl").exists() else []
        assert hooks["items"] == len(items) and {i["page_url"] for i in items} == _html_pages(node)
    urls = [i["page_url"] for d in nodes if (d / "items.jsonl").exists() for i in _items(d)]
    assert len(urls) == len(set(urls)) and set(urls) == _html_pages(tmp_path / "out")


async def test_items_flag_writes_parquet_and_a_failed_items_write_exits_3(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the test extra) is not installed")
    model = WebModel(WebParams.for_tests(n_hosts=3))
    modules = _hooks_package(tmp_path)
    (tmp_path / "taken.parquet").write_text("a file where the Parquet directory would go")
    async with TestWebServer(model) as server:
        toml = _toml(model, server, tmp_path)
        code, out, err = await _webgather("crawl", server.home_url(0), "--config", str(toml), "--out", "out",
                                          "--no-progress", "--hooks", "sitehooks.extract", "--items", "items.parquet",
                                          cwd=tmp_path, pythonpath=modules)
        assert code == 0, (out, err)
        failed = await _webgather("crawl", server.home_url(0), "--config", str(toml), "--out", "out2",
                                  "--no-progress", "--hooks", "sitehooks.extract", "--items", "taken.parquet",
                                  cwd=tmp_path, pythonpath=modules)
    rows = pq.read_table(tmp_path / "items.parquet").to_pylist()
    assert {r["page_url"] for r in rows} == _html_pages(tmp_path / "out") and all(r["h1"] == r["title"] for r in rows)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["hooks"]["items"] == len(rows) and summary["hooks"]["items_file"] == "items.parquet"
    assert failed[0] == 3 and failed[2].count("\n") == 1 and "cannot open Parquet items directory" in failed[2], failed
