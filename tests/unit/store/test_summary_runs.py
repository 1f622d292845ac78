"""summary.json adds up across the runs of one crawl (store.summary.add_run / record_run)."""

from __future__ import annotations

from pathlib import Path

from webgather.store.summary import add_run, read_summary, record_run


def _run(pages: int, wall_s: float, *, status: dict[str, int], finished: bool, end: str = "done") -> dict[str, object]:
    return {"pages": pages, "attempts": pages, "retries": 0, "robots_fetches": 1, "bytes_received": 10 * pages,
            "links_found": 3 * pages, "urls_new": 2 * pages, "status": status, "errors": {"robots": 1},
            "wall_s": wall_s, "cpu_s": wall_s / 2, "peak_rss_mib": 50.0 + pages, "finished": finished,
            "end": end, "frontier": {"queued": 0 if finished else 5}}


def test_the_first_run_is_the_total_with_one_run_listed() -> None:
    run = _run(10, 2.0, status={"200": 10}, finished=True)
    total = add_run(None, run)
    assert total["pages"] == 10 and len(total["runs"]) == 1 and total["runs"][0]["pages"] == 10


def test_three_runs_add_up_and_the_state_is_the_last_runs() -> None:
    first = add_run(None, _run(100, 4.0, status={"200": 90, "404": 10}, finished=False, end="stopped"))
    second = add_run(first, _run(239, 6.0, status={"200": 239}, finished=False, end="stopped"))
    third = add_run(second, _run(11, 1.0, status={"200": 10, "500": 1}, finished=True))
    assert third["pages"] == 350 and third["bytes_received"] == 3500 and third["links_found"] == 1050
    assert third["status"] == {"200": 339, "404": 10, "500": 1} and third["errors"] == {"robots": 3}
    assert third["wall_s"] == 11.0 and third["pages_per_s"] == round(350 / 11.0, 1)
    assert third["finished"] is True and third["frontier"] == {"queued": 0} and third["end"] == "done"
    assert [r["pages"] for r in third["runs"]] == [100, 239, 11]
    assert [r["end"] for r in third["runs"]] == ["stopped", "stopped", "done"]
    assert third["peak_rss_mib"] == 289.0  # the largest run's


def test_a_summary_from_before_runs_were_kept_counts_as_one_run() -> None:
    old = _run(50, 5.0, status={"200": 50}, finished=False)
    total = add_run(old, _run(5, 1.0, status={"200": 5}, finished=True))
    assert total["pages"] == 55 and [r["pages"] for r in total["runs"]] == [50, 5]


def test_record_run_reads_and_writes_the_directory(tmp_path: Path) -> None:
    record_run(tmp_path, _run(3, 1.0, status={"200": 3}, finished=False))
    (tmp_path / "junk").write_text("")
    total = record_run(tmp_path, _run(4, 1.0, status={"200": 4}, finished=True))
    assert read_summary(tmp_path) == total and total["pages"] == 7


def test_an_unreadable_previous_summary_starts_the_count_afresh(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{not json")
    total = record_run(tmp_path, _run(4, 1.0, status={"200": 4}, finished=True))
    assert total["pages"] == 4 and len(total["runs"]) == 1
