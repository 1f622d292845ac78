"""A node's first steps with Redis (connect, join or start the crawl) wait through a short outage."""

from __future__ import annotations

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
    from webgather.runtime import cluster_crawl

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
    from webgather.runtime.cluster_crawl import ship_last

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
