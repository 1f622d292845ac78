"""The nemesis (bench/nemesis.py): its schedules replay, its checker sees what it must, its proxy cuts
links as it says, and a short fixed-seed schedule set passes against the real processes."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

import pytest
from nemesis_checker import Facts, RunFacts, Window, check
from nemesis_proxy import LinkProxy
from nemesis_run import Setup, run_schedule, summary_line
from nemesis_schedule import JOINS, MENU, NODE_FAULTS, describe, draw, menu

from webgather.testweb.records import RequestRecord

SMOKE = Setup(nodes=3, hosts=8, pages=20.0, delay_s=0.4, end_bound_s=60.0)
SMOKE_KINDS = ("kill9_keep", "kill9_disk", "stop", "join")
"""Faults the runtime survives today (after a node's first seconds); docs/nemesis.md has what the others find."""
SMOKE_SEEDS = (17, 19)
"""t+4.4s stop n0 for 2.3s, t+6.5s kill9_disk n2; t+5.6s kill9_keep n2 for 3.0s, t+6.4s stop n1 for 2.3s."""


def test_a_seed_replays_its_schedule_and_seeds_differ() -> None:
    kinds = menu("file")
    assert draw(17, 4, 3, kinds, 15.0) == draw(17, 4, 3, kinds, 15.0)
    assert len({describe(draw(s, 4, 3, kinds, 15.0)) for s in range(20)}) == 20


def test_schedules_keep_a_first_node_and_target_live_nodes() -> None:
    for seed in range(300):
        faults = draw(seed, 6, 2, menu("s3"), 15.0)
        alive = {"n0", "n1"}
        for f in faults:
            assert f.kind in MENU and f.kind not in ("store_full", "store_ro")
            if f.kind in JOINS:
                alive.add(str(f.target))
            elif f.kind in NODE_FAULTS:
                assert f.target in alive, (seed, describe(faults))
            if f.kind == "kill9_disk":
                alive.discard(str(f.target))
        assert alive & {"n0", "n1"}, (seed, describe(faults))
    with pytest.raises(ValueError, match="not on the menu"):
        menu("file", ("store_down",))


def _facts(**changes: object) -> Facts:
    record = [RequestRecord(0.0, 0.1, "h1", "/a", "127.0.0.1", "127.0.0.2", 1, 200, 10),
              RequestRecord(1.0, 1.1, "h1", "/b", "127.0.0.1", "127.0.0.2", 2, 200, 10)]
    entries = [{"url": "http://h1/a", "kind": "page", "fetched_at": 100.0, "node": "n0"},
               {"url": "http://h1/b", "kind": "page", "fetched_at": 101.0, "node": "n0"}]
    runs = [RunFacts("n0", 0, 0, False, "done", True), RunFacts("n1", 0, -9, True, "", True)]
    values: dict[str, object] = dict(closure={"http://h1/a", "http://h1/b"}, archived={"http://h1/a", "http://h1/b"},
                                     entries=entries, runs=runs, records=record, delay_s=0.5, windows=[], hung=[])
    values.update(changes)
    return Facts(**values)  # type: ignore[arg-type]


def test_the_checker_passes_a_clean_crawl_and_names_each_violation() -> None:
    assert check(_facts()).ok
    lost = check(_facts(archived={"http://h1/a"}))
    assert (lost.lost, lost.silent_loss, lost.ok) == (1, True, False)
    assert any("exited 0 although 1 URLs were lost" in p for p in lost.exit_problems)
    said = [RunFacts("n0", 0, 4, False, "DATA LOST: buckets_started_empty 3", True)]
    false_alarm = check(_facts(runs=said))
    assert false_alarm.false_alarm and not false_alarm.ok
    close = [RequestRecord(0.0, 0.1, "h1", "/a", "p", "l", 1, 200, 1), RequestRecord(0.2, 0.3, "h1", "/b", "p", "l", 2, 200, 1)]
    assert check(_facts(records=close)).short_gaps == 1
    twice = [*_facts().entries, {"url": "http://h1/a", "kind": "page", "fetched_at": 150.0, "node": "n1"}]
    assert check(_facts(entries=twice)).outside_bound == 1
    assert check(_facts(entries=twice, windows=[Window("n0", 95.0, 105.0)])).outside_bound == 0
    assert check(_facts(entries=twice, windows=[Window("n1", 95.0, 105.0)])).outside_bound == 1
    assert check(_facts(hung=["n0.0"])).hangs == 1
    assert check(_facts(runs=[RunFacts("n0", 0, 2, False, "bad", True)])).exit_problems
    stopped = check(_facts(archived=set(), runs=[RunFacts("n0", 0, 6, False, "cannot continue", True)]))
    assert stopped.stopped and stopped.lost == 0 and stopped.ok


def test_a_url_reached_only_through_a_failed_fetch_is_cut_off_not_lost() -> None:
    """A page whose fetch timed out on the loaded machine never gave the crawl its links (s3 seed 1101)."""
    a, b, w, x = "http://h1/a", "http://h1/b", "http://h1/w/b", "http://h1/x"
    links = {a: (b, x), b: (w,), x: ()}
    entries = [{"url": a, "kind": "page", "fetched_at": 100.0, "node": "n0"},
               {"url": b, "kind": "page", "fetched_at": 101.0, "node": "n0", "error": "timeout"}]
    facts = _facts(closure={a, b, w, x}, archived={a, x}, entries=entries, links=links, roots=frozenset({a}))
    v = check(facts)
    assert (v.missing, v.failed, v.cut_off, v.lost) == (2, 1, 1, 0) and v.ok
    also_x = {**links, x: (w,)}  # w is also linked from x, which was fetched: its absence is a loss
    v = check(_facts(closure={a, b, w, x}, archived={a, x}, entries=entries, links=also_x, roots=frozenset({a})))
    assert (v.cut_off, v.lost) == (0, 1) and not v.ok


def test_a_sigterm_death_is_documented_only_before_the_first_line_of_webgather() -> None:
    done = RunFacts("n0", 1, 0, False, "done", True)
    at_start = [RunFacts("n0", 0, -15, False, "", False), done]
    assert check(_facts(runs=at_start)).ok
    after_a_line = [RunFacts("n0", 0, -15, False, "webgather: joined as n0", False), done]
    assert any("exited -15" in p for p in check(_facts(runs=after_a_line)).exit_problems)
    assert check(_facts(runs=[RunFacts("n0", 0, -9, False, "", False), done])).exit_problems


async def _echo_server() -> tuple[asyncio.Server, int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionResetError):  # the proxy resets when closed
            while data := await reader.read(100):
                writer.write(data)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


async def _read_or_reset(reader: asyncio.StreamReader) -> bytes:
    """What a read gets (a reset reads as b"")."""
    try:
        return await asyncio.wait_for(reader.read(100), 5)
    except ConnectionResetError:
        return b""


async def test_the_proxy_refuses_when_closed_and_holds_bytes_when_black_holed() -> None:
    server, port = await _echo_server()
    proxy = LinkProxy("127.0.0.1", port)
    await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"one")
        assert await asyncio.wait_for(reader.read(100), 5) == b"one"
        proxy.cut("blackhole")
        writer.write(b"two")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reader.read(100), 0.5)
        proxy.heal()
        assert await asyncio.wait_for(reader.read(100), 5) == b"two"
        proxy.cut("closed")
        assert await _read_or_reset(reader) == b""
        late_reader, late_writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        assert await _read_or_reset(late_reader) == b""
        writer.close()
        late_writer.close()
    finally:
        await proxy.close()
        server.close()
        await server.wait_closed()


needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="the nemesis runs Debian's redis-server (scripts/test installs it as root)")


@pytest.mark.slow
@needs_redis
@pytest.mark.parametrize("seed", SMOKE_SEEDS)
async def test_a_fixed_seed_schedule_keeps_every_invariant(tmp_path: Path, seed: int) -> None:
    faults = draw(seed, 2, SMOKE.nodes, SMOKE_KINDS, 8.0, (2.0, 5.0))
    result = await run_schedule(tmp_path / "work", SMOKE, seed, faults)
    assert result.verdict.closure > 100
    assert result.verdict.ok, f"{describe(faults)}\n{summary_line(result)}\n" + "\n".join(result.verdict.details)


def test_a_slow_clock_nodes_log_times_are_put_on_the_real_clock() -> None:
    from nemesis_cluster import Run
    from nemesis_run import _real_times

    slow = Run("j1", 0, None, Path("j1.log"), slow_clock=True, started_wall=1000.0)  # type: ignore[arg-type]
    entries = [{"node": "j1", "fetched_at": 1005.0}, {"node": "n0", "fetched_at": 1005.0}, {"node": "j1"}]
    _real_times(entries, [slow])
    assert [e.get("fetched_at") for e in entries] == [1010.0, 1005.0, None]


def test_a_results_line_has_each_faults_wall_clock_moments(tmp_path: Path) -> None:
    """Triage puts a kept seed's crawl logs (wall clock) against its faults: each fault's start and heal."""
    import json

    from nemesis_checker import Verdict
    from nemesis_cluster import Applied
    from nemesis_run import Result, record
    from nemesis_schedule import Fault

    stop = Fault(2.0, "stop", "n1", 3.0)
    applied = [Applied(stop, at=100.0, wall=1000.0, healed=103.5)]
    record(Result(7, [stop], Verdict(), applied, {"n1.0": 0}, 40.0, 20.0), tmp_path / "results.jsonl")
    row = json.loads((tmp_path / "results.jsonl").read_text())
    assert row["applied"] == [{"fault": "t+2.0s stop n1 for 3.0s", "wall": 1000.0, "healed_wall": 1003.5}]
