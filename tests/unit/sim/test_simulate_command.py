"""``webgather simulate``: every experiment end to end on a small synthetic web."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgather.cli import main


@pytest.mark.parametrize(
    ("experiment", "extra"),
    [
        ("partition", ["--nodes", "2,4"]),
        ("crawl", ["--nodes", "1,2", "--concurrency", "4"]),
        ("cache", ["--min-log2", "2", "--max-log2", "8", "--slow-step", "3"]),
        ("order", ["--batch", "50"]),
        ("gnp", ["--crawlers", "8", "--landmarks", "4,5", "--dims", "2,3", "--sched-landmarks", "5",
                 "--sched-dims", "3"]),
    ],
)
def test_each_experiment_prints_a_table_and_writes_plots(
    experiment: str, extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = "12" if experiment == "gnp" else "15"
    code = main(["simulate", experiment, "--graph", f"testweb:{hosts}:1:20", "--out", str(tmp_path), *extra])
    assert code == 0
    out = capsys.readouterr().out
    assert "----" in out
    assert (tmp_path / f"{experiment}.txt").read_text().strip() == out.strip()
    assert (tmp_path / f"{experiment}.png").stat().st_size > 1000


def test_bad_graph_spec_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "partition", "--graph", "web:1:2"]) == 2
    assert "testweb:HOSTS:SEED" in capsys.readouterr().err
    assert main(["simulate", "cache", "--graph", "testweb:5:1:10", "--min-log2", "9", "--max-log2", "3"]) == 2


def _write_crawl(directory: Path) -> None:
    """A 12-page crawl of 3 hosts: its crawl log and link log, written by the store."""
    from webgather.store.crawllog import CRAWL_LOG_NAME, CrawlLog
    from webgather.store.linklog import LinkLog
    from webgather.urls import fingerprint, host_key

    urls = [f"http://h{i % 3}.test/p{i}" for i in range(12)]
    log = CrawlLog.open(directory / CRAWL_LOG_NAME)
    links = LinkLog.open(directory)
    for i, url in enumerate(urls[:9]):  # pages 9..11 are linked but never fetched
        log.append({"url": url, "host": host_key(url), "status": 200, "error": None, "bytes": 100,
                    "fetched_at": 1_700_000_000.0 + i, "kind": "page"})
        targets = [urls[(i + 1) % 12], urls[(i + 3) % 12], urls[(i + 3) % 12]]
        links.append_page(url, fingerprint(url), fingerprint(host_key(url)),
                          [(t, fingerprint(t), fingerprint(host_key(t)), "a", False) for t in targets])
    log.close()
    links.close()


@pytest.mark.parametrize("experiment", ["partition", "cache", "order", "crawl"])
def test_experiments_read_a_recorded_crawl(
    experiment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_crawl(tmp_path / "crawl")
    extra = {"partition": ["--nodes", "2,3", "--intervals", "3"],
             "cache": ["--min-log2", "0", "--max-log2", "3", "--slow-step", "1"],
             "order": ["--batch", "2"], "crawl": ["--nodes", "1,2"]}[experiment]
    assert main(["simulate", experiment, "--crawl", str(tmp_path / "crawl"), *extra]) == 0
    out = capsys.readouterr().out
    if experiment == "partition":
        assert "9 pages crawled, 3 hosts, 27 links" in out
    if experiment == "cache":
        assert "27 references, 11 distinct keys" in out  # p1..p11 are linked, p0 is not
