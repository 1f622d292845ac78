"""A node that never saw the crawl joins after Redis lost the crawl's data (FLUSHALL, or a restart without
persistence): it has only Redis to ask, and Redis has nothing. The crawl's shared store keeps what a flush
does not touch: the claim its first node wrote (``crawl.json``). With ``--shared-store`` the new node tells a
lost crawl (exit 6) from a crawl never started (exit 2); without it, one line that names both (exit 6).

Before: exit 2 ("a bad command line") with ``no crawl of that name has been started``, on a good command line
(the nemesis's seeds 3 and 107: a join after ``redis_empty`` / ``redis_flushall``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cluster_crawl_helpers import cluster_config, small_web
from cluster_process_helpers import finish, start_webgather
from test_cluster_redis_faults import _error_lines, _flushall
from test_cluster_redis_outage import CRAWL, _setup, _wait_pages, redis_server  # noqa: F401

from webgather.cluster.embedded import EmbeddedRedis
from webgather.exitcodes import ExitCode
from webgather.testweb import TestWebServer, WebModel


async def _join(tmp_path: Path, url: str, *extra: str, crawl: str = CRAWL) -> tuple[int, str]:
    """``webgather node`` with a fresh --out (a brand-new node); its exit code and output."""
    proc = await start_webgather("node", "--redis", url, "--crawl", crawl, "--out", str(tmp_path / "new"),
                                 "--node-id", "j1", *extra)
    code, output = await finish(proc, 40.0)
    return code, output


async def test_a_new_node_joining_after_a_flush_tells_a_lost_crawl_from_one_never_started(
        tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    params = small_web(n_hosts=24)
    out, store = tmp_path / "crawl", tmp_path / "store"
    async with TestWebServer(WebModel(params)) as srv:
        args, expect, _ = await _setup(tmp_path, srv, params, max_outage_s=30.0, shared_store=store.as_uri(),
                                       checkpoint_s=1.0)
        first = await start_webgather("crawl", *args, "--redis", redis_server.url, "--crawl", CRAWL)
        try:
            await _wait_pages(out, len(expect) // 4, first)
            # a store that is not the crawl's is refused while the crawl is in Redis
            code, output = await _join(tmp_path, redis_server.url, "--shared-store", (tmp_path / "other").as_uri())
            assert code == ExitCode.USAGE and "--shared-store" in _error_lines(output)[0], output
            assert (store / "crawl.json").exists(), "the crawl's first node claims its store as it starts"
            await asyncio.to_thread(_flushall, redis_server.url)
        finally:
            first_code, first_output = await finish(first, 40.0)
        assert first_code == ExitCode.CANNOT_CONTINUE, first_output
        code, output = await _join(tmp_path, redis_server.url, "--shared-store", store.as_uri())
    (line,) = _error_lines(output)
    assert code == ExitCode.CANNOT_CONTINUE, output
    assert "Redis lost the crawl's data" in line and f"shared store {store.as_uri()}" in line, line
    assert "never started" not in line
    with pytest.MonkeyPatch.context() as env:  # the store named by the environment, as a node's other settings
        env.setenv("WEBGATHER_CLUSTER__SHARED_STORE", store.as_uri())
        code, output = await _join(tmp_path, redis_server.url)
    assert code == ExitCode.CANNOT_CONTINUE and "Redis lost the crawl's data" in output, output
    assert "never started" not in output
    code, output = await _join(tmp_path, redis_server.url, "--shared-store", (tmp_path / "empty").as_uri())
    (line,) = _error_lines(output)
    assert code == ExitCode.USAGE and "no crawl of that name has been started" in line, output
    code, output = await _join(tmp_path, redis_server.url)  # no store: it cannot tell, and says both
    (line,) = _error_lines(output)
    assert code == ExitCode.CANNOT_CONTINUE and "never started" in line and "lost its data" in line, output


async def test_a_node_that_read_the_crawl_before_a_flush_does_not_write_its_marker_again(
        tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    """A node that read the crawl's definition, then registers after a FLUSHALL: it used to write the
    crawl's settings (its marker) again, and every node that had registered before then found the marker at
    its beats, crawled on an empty Redis and never saw the crawl's end (the nemesis's seed 107 on s3: two
    nodes hung). Now the registration needs the definition still there: the node stops, and so do the
    others at their next beat."""
    from webgather.cluster import definition
    from webgather.cluster.redis import RedisBackend
    from webgather.errors import CannotContinue
    from webgather.runtime.launch.cluster import start_crawl

    config = cluster_config(small_web(), tmp_path / "crawl", tmp_path / "none.txt", n_buckets=16)
    async with await RedisBackend.connect(redis_server.url, CRAWL, 16) as first, \
            await RedisBackend.connect(redis_server.url, CRAWL, 16) as late:
        await start_crawl(first, config, ["http://h0001.web.test/"], nodes=["a"])
        read = await definition.read(late)
        assert read is not None
        await asyncio.to_thread(_flushall, redis_server.url)
        with pytest.raises(CannotContinue, match="lost the data of crawl"):
            await late.coordinator().register_crawl(definition.identity(read), defined=True)
        with pytest.raises(CannotContinue, match="lost the data of crawl"):
            await first.coordinator().heartbeat("a", {"idle": False}, 1.0)
