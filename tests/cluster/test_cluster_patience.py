"""A node's first steps with Redis (connect, join or start the crawl) wait through a short outage."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from webgather.cluster.patience import within_outage
from webgather.errors import BackendBusy, BackendUnavailable, CannotContinue, StoreError, WriteFailed


async def test_a_step_that_fails_for_less_than_max_outage_s_is_retried_with_two_lines(
        caplog: pytest.LogCaptureFixture) -> None:
    tries: list[int] = []

    async def step() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise BackendUnavailable("cannot reach Redis at redis://127.0.0.1:1: refused")
        return "joined"

    assert await within_outage(step, node="n1", max_outage_s=5.0, poll_s=0.01) == "joined"
    lines = [r.getMessage() for r in caplog.records]
    assert len(tries) == 3 and len(lines) == 2
    assert "pausing and retrying for up to 5 s" in lines[0] and "back after" in lines[1]


async def test_past_max_outage_s_the_node_cannot_continue() -> None:
    async def step() -> str:
        raise BackendUnavailable("cannot reach Redis at redis://127.0.0.1:1: refused")

    with pytest.raises(CannotContinue, match="unavailable for more than 0.05 s"):
        await within_outage(step, node="n1", max_outage_s=0.05, poll_s=0.01)


async def test_a_busy_pool_is_not_waited_for() -> None:
    tries: list[int] = []

    async def step() -> str:
        tries.append(1)
        raise BackendBusy("all connections in use")

    with pytest.raises(BackendBusy):
        await within_outage(step, node="n1", max_outage_s=5.0, poll_s=0.01)
    assert tries == [1]


async def test_a_shared_store_unreachable_at_start_is_waited_for_then_claimed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """S3 refusing connections while a node starts: an outage of the store (retried), not exit 2."""
    import dataclasses

    from webgather.config import CrawlConfig
    from webgather.runtime.launch import cluster as cluster_crawl

    tries: list[int] = []
    claim = cluster_crawl.claim_store

    def flaky(store: Any, epoch: float) -> None:
        tries.append(1)
        if len(tries) < 3:
            raise StoreError("shared store s3://b/p: cannot get crawl.json: Could not connect to the endpoint URL")
        claim(store, epoch)

    monkeypatch.setattr(cluster_crawl, "claim_store", flaky)
    base = CrawlConfig()
    config = dataclasses.replace(base, cluster=dataclasses.replace(
        base.cluster, shared_store=f"file://{tmp_path}/store", max_outage_s=5.0))
    assert await cluster_crawl._claimed_store(config, 1.0, "n1") is not None
    assert len(tries) == 3

    def down(store: Any, epoch: float) -> None:
        raise StoreError("shared store s3://b/p: cannot get crawl.json: refused")

    monkeypatch.setattr(cluster_crawl, "claim_store", down)
    quick = dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, max_outage_s=0.3))
    with pytest.raises(CannotContinue, match="shared store unavailable for more than 0.3 s"):
        await cluster_crawl._claimed_store(quick, 1.0, "n1")


async def test_a_store_that_refuses_the_last_files_at_sigterm_is_a_store_outage_not_a_usage_error() -> None:
    """The store full when a SIGTERMed node ships its last files: exit 6 (CannotContinue), not exit 2."""
    from webgather.runtime.launch.cluster import ship_last

    class Full:
        def ship_all(self) -> int:
            raise StoreError("shared store file:///s: cannot write cdxj/n1-0.cdxj: No space left on device")

    with pytest.raises(CannotContinue, match="cannot take this node's last files.*No space left"):
        await ship_last(Full(), "n1")  # type: ignore[arg-type]

    class DiskFull:
        def ship_all(self) -> int:
            raise WriteFailed("disk full: cannot read /out/x.warc.gz")

    with pytest.raises(WriteFailed):
        await ship_last(DiskFull(), "n1")  # type: ignore[arg-type]


async def test_a_node_whose_backend_goes_away_in_its_first_steps_waits_and_crawls(tmp_path: Path) -> None:
    """Redis away while the node adopts the table and enters the run (before its loops' outage handling):
    the node waits as in an outage and then crawls the whole closure, instead of stopping with exit 2."""
    from cluster_crawl_helpers import cluster_config, fetch_entries, small_web

    from webgather.cluster.inprocess import InProcessHub
    from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
    from webgather.testweb import TestWebServer, WebModel, closure

    params = small_web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=16)
        seeds = [srv.home_url(0)]
        hub = InProcessHub(16)
        crawl = await start_crawl(hub, config, seeds, nodes=["a"])
        coordinator, failures = hub.coordinator(), {"get_table": 2, "counters": 2}
        for name in failures:
            real = getattr(coordinator, name)

            async def flaky(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
                if failures[_name] > 0:
                    failures[_name] -= 1
                    raise BackendUnavailable("cannot reach Redis at redis://127.0.0.1:1: Connection closed by server.")
                return await _real(*args, **kwargs)

            setattr(coordinator, name, flaky)
        async with asyncio.timeout(60):
            summary = await run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id="a",
                                             nodes_dir=out / "nodes", epoch=crawl.epoch)
    assert failures == {"get_table": 0, "counters": 0}
    assert summary["end"] == "done"
    assert {e["url"] for e in fetch_entries(out)} == closure(model, seeds, config)
