"""Persistence: clean restarts, simulated crashes between writes, and a process killed with SIGKILL."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from webgather.config import FrontierConfig, PolitenessConfig
from webgather.errors import CorruptState, IncompatibleCrawl, StoreError
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.urls import fingerprint

FAST = PolitenessConfig(min_delay_s=0.0, per_ip_connections=1000)
SMALL = FrontierConfig(host_queue_memory=3, queue_memory_items=10, seen_memory_entries=7)


def item(url: str, depth: int = 0) -> CrawlItem:
    return CrawlItem(url, fingerprint(url), depth=depth)


def links_of(url: str, n_hosts: int = 5, fanout: int = 4, n_pages: int = 200) -> list[CrawlItem]:
    """A small deterministic web: page i links to fanout pages spread over n_hosts hosts."""
    i = int(url.rsplit("/", 1)[1])
    targets = [(i * 7 + k * 13) % n_pages for k in range(1, fanout + 1)]
    return [item(f"http://h{t % n_hosts}.test/{t}", 1) for t in targets]


def crash(f: Frontier) -> None:
    """What kill -9 leaves: the open transaction, unwritten journal ops and the seen memory tier are gone."""
    assert f.persist is not None
    f.persist.db.conn.close()  # rolls back the open transaction
    f.persist.journal.close()
    f.persist = None


def take(f: Frontier, now: float = 0.0) -> CrawlItem:
    got, _ = f.next_ready(now)
    assert got is not None
    return got


def drain(f: Frontier, done: set[str], crawl: bool = True) -> list[str]:
    fetched = []
    while True:
        got, wake = f.next_ready(0.0)
        if got is None:
            assert math.isinf(wake)
            return fetched
        assert got.url not in done, f"{got.url} fetched twice"
        fetched.append(got.url)
        done.add(got.url)
        if crawl:
            f.add(links_of(got.url), 0.0)
        f.complete(got, 0.0)


def test_clean_restart_keeps_queue_seen_set_and_host_caps(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16, max_pages_per_host=30)
    f.add([item(f"http://a.test/{i}") for i in range(25)], 0.0)
    first = take(f)
    f.complete(first, 0.0)
    f.close()
    g = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16, max_pages_per_host=30)
    assert (g.pending(), g.stats()["seen"], g.stats()["resumed_in_flight"]) == (24, 25, 0)
    assert g.queued_hosts() == [("a.test", "http://a.test/1")]
    assert g.add([item(f"http://a.test/{i}") for i in range(40)], 0.0) == [item(f"http://a.test/{i}") for i in range(25, 30)]
    assert g.stats()["dropped_by_host_cap"] == 10
    fetched = drain(g, {first.url}, crawl=False)
    assert sorted(fetched) == sorted(f"http://a.test/{i}" for i in range(1, 30))
    g.close()


def test_crash_loses_only_uncommitted_adds_whose_page_is_fetched_again(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    f.add([item("http://h0.test/0")], 0.0)
    f.flush()
    page = take(f)
    f.add(links_of(page.url), 0.0)  # not committed: the crash comes before complete(page)
    crash(f)
    g = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    assert g.pending() == 1 and g.stats()["seen"] == 1
    again = take(g)
    assert again.url == page.url
    assert len(g.add(links_of(page.url), 0.0)) == 4
    g.complete(again, 0.0)
    crash(g)
    h = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    assert h.pending() == 4 and h.stats()["seen"] == 5
    assert h.add([item("http://h0.test/0")], 0.0) == []
    h.close()


def test_items_in_flight_at_a_crash_are_counted_and_fetched_again(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    f.add([item(f"http://h{i}.test/{i}") for i in range(6)], 0.0)
    taken = [take(f) for _ in range(3)]
    f.complete(taken[0], 0.0)  # commits: the other two are marked in flight on disk
    crash(f)
    g = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    assert g.stats()["resumed_in_flight"] == 2
    fetched = drain(g, {taken[0].url}, crawl=False)
    assert sorted(fetched) == sorted(f"http://h{i}.test/{i}" for i in range(6) if f"http://h{i}.test/{i}" != taken[0].url)
    g.close()


@pytest.mark.parametrize("checkpoint_every_s", [0.0, 0.35, math.inf])
def test_repeated_crashes_lose_nothing_and_fetch_nothing_twice(tmp_path: Path, checkpoint_every_s: float) -> None:
    done: set[str] = set()
    now = 0.0

    def reopen() -> Frontier:
        f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
        assert f.persist is not None
        f.persist.checkpoint_interval_s = checkpoint_every_s
        return f

    f = reopen()
    f.add([item("http://h0.test/0")], now)
    f.flush()
    for round_ in range(12):
        for _ in range(9 + round_):
            now += 0.1
            got, _ = f.next_ready(now)
            if got is None:
                break
            assert got.url not in done, f"{got.url} fetched twice"
            f.add(links_of(got.url), now)
            f.complete(got, now)
            done.add(got.url)
        take_and_hold = f.next_ready(now)[0]  # in flight at the crash
        if take_and_hold is not None:
            f.add(links_of(take_and_hold.url), now)
        crash(f)
        f = reopen()
    drain(f, done)
    assert done == _closure("http://h0.test/0")
    f.close()


def test_a_torn_journal_tail_is_ignored_and_a_bad_middle_record_refused(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    f.add([item("http://a.test/1")], 0.0)
    f.complete(take(f), 0.0)  # journal: push, take, done
    f.add([item("http://a.test/2")], 0.0)
    got = take(f)
    f.retry(got, 0.0, not_before=0.0)  # journal record 2
    journal = f.persist.journal.gen if f.persist else 0
    crash(f)
    path = tmp_path / f"journal-{journal:010d}.log"
    good = path.read_bytes()
    path.write_bytes(good + b"\x40\x00\x00\x00\x01\x02")  # a record cut short by the kill
    g = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    again = take(g)
    assert (again.url, again.attempt, g.pending()) == ("http://a.test/2", 1, 0)
    crash(g)
    other = tmp_path / "other"
    h = Frontier.open(other, SMALL, FAST, n_buckets=16)
    h.add([item("http://a.test/1")], 0.0)
    h.complete(take(h), 0.0)
    h.add([item("http://a.test/2")], 0.0)
    h.complete(take(h), 0.0)
    gen = h.persist.journal.gen if h.persist else 0
    crash(h)
    path = other / f"journal-{gen:010d}.log"
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF  # inside the first record's payload
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptState):
        Frontier.open(other, SMALL, FAST, n_buckets=16)


def _closure(seed: str) -> set[str]:
    seen, stack = {seed}, [seed]
    while stack:
        for link in links_of(stack.pop()):
            if link.url not in seen:
                seen.add(link.url)
                stack.append(link.url)
    return seen


def test_a_crash_between_seen_spill_and_journal_clear_is_harmless(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    f.add([item(f"http://a.test/{i}") for i in range(5)], 0.0)
    f.flush()
    assert f.persist is not None
    f.persist.seen.flush()  # the run is written; the journal still names the same keys
    crash(f)
    g = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    assert g.stats()["seen"] == 5 and g.pending() == 5
    assert g.add([item(f"http://a.test/{i}") for i in range(6)], 0.0) == [item("http://a.test/5")]
    g.close()


def test_settings_that_differ_from_the_state_are_refused(tmp_path: Path) -> None:
    Frontier.open(tmp_path, SMALL, FAST, n_buckets=16).close()
    with pytest.raises(IncompatibleCrawl):
        Frontier.open(tmp_path, SMALL, FAST, n_buckets=32)
    with pytest.raises(IncompatibleCrawl):
        Frontier.open(tmp_path, FrontierConfig(order="opic"), FAST, n_buckets=16)


def test_a_state_in_use_by_another_process_is_refused(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    f.add([item("http://a.test/")], 0.0)
    f.flush()
    code = ("import sys; from pathlib import Path; from webgather.frontier.frontier import Frontier;"
            "from webgather.config import FrontierConfig, PolitenessConfig; from webgather.errors import StoreError\n"
            "try:\n Frontier.open(Path(sys.argv[1]), FrontierConfig(), PolitenessConfig(), n_buckets=16)\n"
            "except StoreError as e:\n print('refused', e); sys.exit(3)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    f.close()


def test_unreadable_state_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "frontier.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(CorruptState):
        Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    other = tmp_path / "other"
    Frontier.open(other, SMALL, FAST, n_buckets=16).close()
    (other / "seen" / "run-0000000001-0000000001.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(CorruptState):
        Frontier.open(other, SMALL, FAST, n_buckets=16)
    with pytest.raises(StoreError):
        Frontier.open(tmp_path / "frontier.db" / "x", SMALL, FAST)


CHILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from webgather.config import FrontierConfig, PolitenessConfig
    from webgather.frontier.frontier import Frontier
    from webgather.frontier.model import CrawlItem
    from webgather.urls import fingerprint
    sys.path.insert(0, sys.argv[2])
    from test_frontier_resume import links_of, item
    f = Frontier.open(Path(sys.argv[1]), FrontierConfig(host_queue_memory=3, queue_memory_items=10,
                      seen_memory_entries=7), PolitenessConfig(min_delay_s=0.0, per_ip_connections=1000), n_buckets=16)
    f.persist.checkpoint_interval_s = float(sys.argv[3])
    f.add([item("http://h0.test/0")], 0.0)
    f.flush()
    held = []
    now = 0.0
    while True:
        now += 0.01
        got, _ = f.next_ready(now)
        if got is None:
            if not held:
                break
        else:
            held.append(got)
        if len(held) >= 3 or got is None:
            page = held.pop(0)
            f.add(links_of(page.url), now)
            sys.stdout.write("completing " + page.url + "\\n")
            sys.stdout.flush()
            f.complete(page, now)
            sys.stdout.write("done " + page.url + "\\n")
            sys.stdout.flush()
    print("finished", flush=True)
    import time
    time.sleep(60)
""")


@pytest.mark.parametrize("checkpoint_every_s", ["0.0", "0.1", "inf"])
def test_sigkill_mid_crawl_loses_no_url_and_refetches_no_completed_one(tmp_path: Path, checkpoint_every_s: str) -> None:
    state = tmp_path / "state"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(state), str(Path(__file__).parent), checkpoint_every_s],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done: set[str] = set()
    completing: set[str] = set()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            kind, _, url = line.strip().partition(" ")
            (done if kind == "done" else completing).add(url)
            if len(done) >= 60 or kind == "finished":
                break
        os.kill(proc.pid, signal.SIGKILL)
        for line in proc.stdout:  # what the child wrote before it died
            kind, _, url = line.strip().partition(" ")
            (done if kind == "done" else completing).add(url)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert len(done) >= 60
    unsure = completing - done  # killed inside complete(): done or not, either is right
    assert len(unsure) <= 1
    f = Frontier.open(state, SMALL, FAST, n_buckets=16)
    assert f.stats()["resumed_in_flight"] >= 1
    after: set[str] = set()
    fetched = drain(f, after)
    assert not set(fetched) & done, "a completed URL was fetched again"
    assert done | set(fetched) | unsure == _closure("http://h0.test/0")
    f.close()
