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
