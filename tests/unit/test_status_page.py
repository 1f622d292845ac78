"""The status page's pure parts: figures from heartbeat info, the SVG chart, the HTML, the host tally."""

from __future__ import annotations

import json
import random
import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from webgather.cluster.mapping import initial
from webgather.cluster.status_html import render_page
from webgather.cluster.status_model import HISTORY_INTERVALS, build_status, status_record
from webgather.cluster.status_svg import line_chart, nice_ticks
from webgather.runtime.engine.host_tally import HostTally
from webgather.runtime.engine.stats import CrawlStats

EPOCH = 1_700_000_000.0


def _info(pages: int, intervals: dict[int, int], *, wall: float, idle: bool = False, **extra: object) -> dict[str, object]:
    return {"idle": idle, "applied": True, "pages": pages, "queued": 5, "in_flight": 2, "interval_s": 2.0,
            "epoch": EPOCH, "wall": wall, "intervals": {str(k): v for k, v in intervals.items()}, **extra}


def _members() -> dict[str, dict[str, object]]:
    return {
        "a": _info(30, {0: 10, 1: 12, 2: 8}, wall=EPOCH + 6.5, errors={"timeout": 2, "robots": 5},
                   hosts=[["h1.test", 20, 0], ["h2.test", 10, 0]]),
        "b": _info(14, {1: 4, 2: 10}, wall=EPOCH + 6.2, idle=True, errors={"robots": 1, "reset": 1},
                   hosts=[["h3.test", 9, 0], ["h2.test", 5, 1]]),
    }


def test_status_figures_come_from_the_heartbeats_the_table_and_the_counters() -> None:
    table = initial(["a", "b", "c"], 12)
    counters = {"runs": 1, "done": 0, "unrecoverable_buckets": 2, "recovered.c": 1}
    status = build_status("c1", _members(), table, counters, now=EPOCH + 7.0)
    assert status.table_version == 0 and status.n_buckets == 12 and not status.finished
    by_node = {n.node: n for n in status.nodes}
    assert [n.node for n in status.nodes] == ["a", "b", "c"]
    assert by_node["a"].alive and by_node["a"].state == "busy" and by_node["a"].buckets == 4
    assert by_node["a"].pages_per_s == 4.0  # 8 pages in interval 2, its last complete one at wall 6.5: 8 / 2 s
    assert by_node["b"].idle and by_node["b"].state == "idle" and by_node["b"].heartbeat_age_s == pytest.approx(0.8)
    assert not by_node["c"].alive and by_node["c"].state == "missing" and by_node["c"].buckets == 4
    assert status.pages == 44
    # interval 3 (now) is under way: left out; 0..2 summed over the nodes
    assert [(p.interval, p.start_s, p.pages_per_s) for p in status.history] == [(0, 0.0, 5.0), (1, 2.0, 8.0),
                                                                                (2, 4.0, 9.0)]
    assert status.history[0].var_share is None  # only a counted
    assert status.history[2].var_share == pytest.approx(((2 * 8 / 18 - 1) ** 2 + (2 * 10 / 18 - 1) ** 2) / 2 / 4)
    assert status.var_share_last == status.history[2].var_share
    assert status.errors == (("robots", 6), ("timeout", 2), ("reset", 1))
    assert [(h.host, h.pages, h.overcount) for h in status.busiest] == [("h1.test", 20, 0), ("h2.test", 15, 1),
                                                                         ("h3.test", 9, 0)]
    assert status.losses == (("unrecoverable_buckets", 2),)
    assert ("recovered.c", 1) in status.recovery
    assert json.loads(json.dumps(status_record(status)))["nodes"][2]["state"] == "missing"


def test_history_keeps_the_last_complete_intervals_with_zeros_between() -> None:
    members = {"a": _info(3, {0: 1, 100: 2}, wall=EPOCH + 205.0)}
    status = build_status("c1", members, None, {}, now=EPOCH + 205.0)  # interval 102 under way
    assert len(status.history) == HISTORY_INTERVALS
    assert status.history[-1].interval == 101 and status.history[-1].pages_per_s == 0.0
    assert status.history[-2].pages_per_s == 1.0 and status.pages_per_s == 0.0
    assert status.table_version is None and status.nodes[0].buckets == 0


def test_malformed_heartbeat_fields_count_zero_instead_of_failing() -> None:
    members = {"a": {"pages": "many", "intervals": {"x": 1, "0": float("nan")}, "errors": ["bad"],
                     "hosts": [["h", 1], "x"], "wall": None}}
    status = build_status("c1", members, None, {"runs": 1, "done": 1}, now=EPOCH)
    assert status.pages == 0 and status.errors == () and status.busiest == () and status.finished
    assert "crawl c1" in render_page(status, 5)


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    assert nice_ticks(0, 9.3) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(0, 0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]  # a zero span widens to 1
    assert nice_ticks(0, 1e-4, 4) == [0, 5e-05, 1e-04]
    assert nice_ticks(3, 17) == [0, 5, 10, 15, 20]  # starts at or below the low end
    with pytest.raises(ValueError):
        nice_ticks(1, 0)


def test_line_chart_is_well_formed_svg_with_the_points_scaled_into_the_plot() -> None:
    svg = line_chart([(0, 0), (2, 5), (4, 10)], title="pages <per> s", x_label="t", y_label="p/s")
    root = ET.fromstring(svg)  # well-formed XML; the title is escaped
    ns = "{http://www.w3.org/2000/svg}"
    assert root.find(f"{ns}title").text == "pages <per> s"  # type: ignore[union-attr]
    line = root.find(f"{ns}polyline")
    assert line is not None
    xy = [tuple(map(float, p.split(","))) for p in line.attrib["points"].split()]
    assert xy[0][0] < xy[1][0] < xy[2][0] and xy[0][1] > xy[1][1] > xy[2][1]  # right and up
    assert xy[0][1] == pytest.approx(220 - 40) and xy[2][1] == pytest.approx(14)  # y axis 0..10 fills the plot
    assert len(root.findall(f"{ns}circle")) == 3
    empty = ET.fromstring(line_chart([], title="t", x_label="x", y_label="y", empty_text="nothing yet"))
    assert empty.find(f"{ns}polyline") is None and "nothing yet" in "".join(empty.itertext())


def test_page_shows_nodes_chart_errors_hosts_losses_and_refreshes() -> None:
    members = _members()
    members["a"]["hosts"] = [["<script>alert(1)</script>", 3, 0]]
    status = build_status("c1", members, initial(["a", "b", "c"], 12), {"runs": 1, "buckets_started_empty": 3},
                          now=EPOCH + 7.0)
    page = render_page(status, 7.5)
    assert '<meta http-equiv="refresh" content="7.5">' in page
    assert "<script" not in page and "&lt;script&gt;" in page  # values from the cluster are escaped
    assert "table v0 over 12 buckets" in page and "2 live node(s)" in page and "running" in page
    assert page.count("<svg") == 2 and "<polyline" in page
    assert 'class="card lost">DATA LOST: buckets_started_empty 3' in page
    assert re.search(r"<td>c</td><td><span class=\"missing\">missing</span></td>", page)
    assert "<td>robots</td><td>6</td>" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # no external asset
    assert "DATA LOST" not in render_page(build_status("c1", members, None, {"runs": 1}, now=EPOCH + 7.0), 5)


def test_host_tally_is_exact_within_capacity_and_bounded_beyond() -> None:
    tally = HostTally(capacity=3)
    for host, n in (("a", 5), ("b", 3), ("c", 1)):
        tally.add(host, n)
    assert tally.top(2) == [("a", 5, 0), ("b", 3, 0)]
    tally.add("d")  # displaces c (1): d counts 1 + 1, overcount 1
    assert len(tally) == 3 and tally.top(3) == [("a", 5, 0), ("b", 3, 0), ("d", 2, 1)]
    for _ in range(10):
        tally.add("e")  # a heavy newcomer rises to the top
    assert tally.top(1)[0][0] == "e" and tally.top(1)[0][1] - tally.top(1)[0][2] <= 10 <= tally.top(1)[0][1]
    with pytest.raises(ValueError):
        HostTally(0)


@pytest.mark.parametrize("seed", range(5))
def test_host_tally_keeps_space_saving_bounds_on_a_skewed_stream(seed: int) -> None:
    rng = random.Random(seed)
    capacity, stream = 16, [f"h{min(int(rng.paretovariate(0.8)), 500)}" for _ in range(5000)]
    tally, truth = HostTally(capacity), Counter(stream)
    for host in stream:
        tally.add(host)
    reported = {host: (pages, over) for host, pages, over in tally.top(capacity)}
    assert len(tally) == capacity and len(truth) > capacity
    for host, n in truth.items():
        if n > len(stream) / capacity:
            assert host in reported  # every host above N / capacity is tracked
        if host in reported:
            pages, over = reported[host]
            assert pages - over <= n <= pages
    assert [h for h, _n, _o in tally.top(3)] == [h for h, _n in truth.most_common(3)]


def test_crawl_stats_count_pages_per_host() -> None:
    stats = CrawlStats(started_at=EPOCH)
    for url in ("http://h1.test:8080/a", "http://h1.test:8080/b", "http://h2.test/"):
        stats.record_page(EPOCH + 1, 200, None, 10, url)
    stats.record_page(EPOCH + 1, 200, None, 10)  # callers without a URL still count pages
    assert stats.pages == 4 and stats.hosts.top(5) == [("h1.test:8080", 2, 0), ("h2.test", 1, 0)]
