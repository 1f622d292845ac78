"""When the pages came: the time to 99 % of pages and the last page's time, beside pages/s, in every summary."""

from __future__ import annotations

import pytest

from webgather.cluster.status import merge_summaries
from webgather.commands.report import print_cluster_summary, print_summary
from webgather.runtime.engine.stats import PAGE_TIME_BUCKETS, CrawlStats, page_time_bucket, page_time_upper_s
from webgather.store.summary import add_run


def _stats(offsets: list[float]) -> CrawlStats:
    stats = CrawlStats(started_at=1000.0)
    for offset in offsets:
        stats.record_page(1000.0 + offset, 200, None, 10)
    return stats


def test_a_crawl_held_by_one_late_page_reports_99_percent_long_before_its_last_page() -> None:
    stats = _stats([0.5 * i for i in range(199)] + [600.0])  # 200 pages: 198 by 98.5 s, one at 99 s, one at 600 s
    figures = stats.as_dict()
    assert figures["pages_99_s"] == pytest.approx(98.5, rel=0.006)
    assert figures["last_page_s"] == 600.0
    assert _stats([]).as_dict()["pages_99_s"] is None and _stats([]).as_dict()["last_page_s"] is None


def test_the_99_percent_time_is_never_past_the_last_page_and_buckets_are_bounded() -> None:
    assert _stats([0.01, 0.02]).as_dict()["pages_99_s"] == 0.02
    assert page_time_bucket(-5.0) == 0 and page_time_bucket(1e12) == PAGE_TIME_BUCKETS - 1
    for seconds in (0.05, 1.0, 37.0, 3600.0, 86_400.0 * 30):
        bucket = page_time_bucket(seconds)
        assert seconds <= page_time_upper_s(bucket) <= seconds * 1.0051 + 0.1


def test_the_summary_keeps_each_run_s_figures_and_the_cluster_merge_takes_the_latest_node() -> None:
    first = {"pages": 10, "wall_s": 10.0, "cpu_s": 1.0, "pages_99_s": 8.0, "last_page_s": 9.0}
    second = {"pages": 5, "wall_s": 4.0, "cpu_s": 1.0, "pages_99_s": 3.0, "last_page_s": 3.5}
    total = add_run(add_run(None, first), second)
    assert (total["pages_99_s"], total["last_page_s"]) == (3.0, 3.5)
    assert [r["pages_99_s"] for r in total["runs"]] == [8.0, 3.0]
    merged = merge_summaries([{"node": "a", "pages": 3, "pages_99_s": 5.0, "last_page_s": 6.0},
                              {"node": "b", "pages": 4, "pages_99_s": 7.5, "last_page_s": 190.0},
                              {"node": "c", "pages": 0, "pages_99_s": None, "last_page_s": None}], wall_s=632.0)
    assert (merged["pages_99_s"], merged["last_page_s"]) == (7.5, 190.0)


def test_the_printed_summaries_show_both_beside_pages_per_s(capsys: pytest.CaptureFixture[str]) -> None:
    summary = {"pages": 200, "wall_s": 632.0, "pages_per_s": 0.3, "cpu_ms_per_page": 1.0, "peak_rss_mib": 50.0,
               "status": {}, "errors": {}, "robots_fetches": 1, "retries": 0, "links_found": 0, "urls_new": 0,
               "finished": True, "pages_99_s": 98.5, "last_page_s": 600.0}
    print_summary(summary)
    assert "99 % of the pages fetched by 98.5 s, the last page at 600 s" in capsys.readouterr().out
    merged = merge_summaries([{"node": "a", "pages": 3, "pages_99_s": 5.0, "last_page_s": 6.0}], wall_s=60.0)
    print_cluster_summary({**merged, "finished": True})
    assert "every node had 99 % of its pages by 5 s, the last page at 6 s" in capsys.readouterr().out
