"""Load-balance figures (Table 1's variance per interval), merged summaries, the status text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webgather.cluster.mapping import initial
from webgather.cluster.status import interval_load, merge_summaries, status_text


def test_interval_load_is_the_variance_of_normalized_shares() -> None:
    rows = interval_load({"a": {0: 30, 1: 50}, "b": {0: 10, 1: 50}})
    assert [r["interval"] for r in rows] == [0, 1]
    first = rows[0]
    assert first["share"] == {"a": 1.5, "b": 0.5}
    assert first["var_norm"] == pytest.approx(0.25) and first["var_share"] == pytest.approx(0.25 / 4)
    assert rows[1]["var_norm"] == 0.0


def test_a_node_counts_only_within_its_own_span_of_intervals() -> None:
    rows = interval_load({"a": {0: 10, 1: 10, 2: 10}, "late": {2: 10}})
    assert rows[0]["pages"] == {"a": 10} and rows[2]["pages"] == {"a": 10, "late": 10}


def test_merge_summaries_adds_traffic_and_load() -> None:
    nodes = [
        {"node": "a", "pages": 60, "wall_s": 2.0, "cross": {"messages": 6, "urls": 20, "bytes": 600},
         "status": {"200": 60}, "errors": {}, "interval_s": 1.0, "pages_per_interval": [20, 20, 20]},
        {"node": "b", "pages": 40, "wall_s": 2.5, "cross": {"messages": 4, "urls": 10, "bytes": 400},
         "status": {"200": 39, "404": 1}, "errors": {"x": 1}, "interval_s": 1.0, "pages_per_interval": [20, 10, 10]},
    ]
    merged = merge_summaries(nodes, wall_s=4.0, finished=True)
    assert merged["pages"] == 100 and merged["pages_per_s"] == 25.0
    assert merged["cross"]["messages"] == 10 and merged["cross"]["messages_per_page"] == 0.1
    assert merged["status"] == {"200": 99, "404": 1}
    load = merged["load"]
    assert len(load["intervals"]) == 3 and load["var_share_mean"] == pytest.approx(load["intervals"][1]["var_share"])


def test_status_text_lists_nodes_buckets_and_balance() -> None:
    table = initial(["a", "b"], 8)
    members = {"a": {"idle": False, "applied": True, "pages": 12, "queued": 3, "in_flight": 1, "messages": 2,
                     "urls_sent": 5, "bytes_sent": 100, "cache_saved": 1, "interval_s": 10.0, "epoch": 0.0,
                     "wall": 25.0, "intervals": {"0": 8, "1": 4}}}
    text = status_text(members, table, {"runs": 1}, "c1")
    assert text.splitlines()[0].startswith("crawl c1: table v0 over 8 buckets, 1 live node(s)")
    assert "missing" in text and "busy" in text and "0.4" in text  # b missing; a's rate 4 pages / 10 s
    assert "var_share" in text


def test_status_text_names_the_coordinator() -> None:
    members = {"a": {"idle": True, "applied": True}, "b": {"idle": True, "applied": True}}
    text = status_text(members, initial(["a", "b"], 8), {"runs": 1}, "c1", coordinator="b")
    assert text.splitlines()[1] == "coordinator: b"
    assert [line.split()[:3] for line in text.splitlines() if line.startswith(("a ", "b "))] == [
        ["a", "idle", "4"], ["b", "idle,", "coordinator"]]
    assert "coordinator: none" in status_text(members, None, {}, "c1")


async def test_cluster_status_says_which_node_coordinates(tmp_path: Path) -> None:
    """``webgather cluster status`` against a real Redis where node b holds the coordinator lease."""
    from cluster_process_helpers import finish, start_webgather

    from webgather.cluster.embedded import EmbeddedRedis
    from webgather.cluster.redis import RedisBackend

    with EmbeddedRedis(tmp_path / "redis") as server:
        backend = await RedisBackend.connect(server.url, "c1", 8)
        try:
            coordinator = backend.coordinator()
            await coordinator.cas_table(None, initial(["a", "b"], 8))
            for node in ("a", "b"):
                await coordinator.heartbeat(node, {"idle": True, "applied": True}, 60.0)
            assert await coordinator.try_lease("b", 60.0)
            assert await coordinator.lease_holder() == "b"
        finally:
            await backend.aclose()
        code, text = await finish(await start_webgather("cluster", "status", "--redis", server.url, "--crawl", "c1"),
                                  60.0)
        assert code == 0, text
        assert "coordinator: b" in text.splitlines(), text
        code, raw = await finish(await start_webgather("cluster", "status", "--redis", server.url, "--crawl", "c1",
                                                       "--json"), 60.0)
        assert json.loads(raw)["coordinator"] == "b"
