"""``webgather analyze`` on a tiny two-node crawl directory written in the documented format."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from webgather import cli

from .crawlfiles import NodeFiles, write_node

HOSTS = [f"http://h{i}.test" for i in range(10)]


def _crawl(directory: Path) -> dict[str, int]:
    """Two nodes; one community: fans on h0..h3 all link to centers on h4..h6."""
    nodes = {"n1": NodeFiles("n1"), "n2": NodeFiles("n2")}
    at, links, pages = 1_000.0, 0, 0
    centers = [f"{HOSTS[h]}/c" for h in (4, 5, 6)]
    for i, host in enumerate(HOSTS):
        node = nodes["n1" if i % 2 == 0 else "n2"]
        for p in range(3):
            out = [f"{host}/p{(p + 1) % 3}", f"{HOSTS[(i + 1) % 10]}/p0"]
            if i < 4 and p == 0:  # a fan: 3 centers + 3 pages on h7..h9 of its own
                out += centers + [f"{HOSTS[h]}/from{i}" for h in (7, 8, 9)]
            node.page(f"{host}/p{p}", at, out, size=2_000 + 100 * p)
            at, links, pages = at + 30.0, links + len(out), pages + 1
    for url in centers:
        nodes["n2"].page(url, at, [], size=500)
        at, pages = at + 30.0, pages + 1
    nodes["n1"].page(f"{HOSTS[0]}/gone", at, [], status=404, size=10)
    nodes["n1"].entries.append({"url": f"{HOSTS[0]}/gone", "host": "h0.test", "status": 503, "error": None,
                                "bytes": 0, "fetched_at": at - 5, "node": "n1", "retry": True})
    nodes["n2"].page(f"{HOSTS[1]}/private", at, [], status=None, error="robots", size=0)  # type: ignore[arg-type]
    write_node(directory, nodes["n1"])
    write_node(directory, nodes["n2"], partial_tail=True)  # a crash: half a line, half a record
    return {"links": links, "pages": pages}


def test_analyze_writes_text_json_pngs_and_html_that_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _crawl(tmp_path / "crawl")
    out = tmp_path / "out"
    code = cli.main(["analyze", str(tmp_path / "crawl"), "--report", str(out), "--sample", "50", "--seed", "3"])
    assert code == 0
    text = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())

    assert report["links"]["links"] == expected["links"]
    assert report["crawl"]["pages"] == expected["pages"]
    assert report["crawl"]["fetches"] == expected["pages"] + 1  # the 404
    assert report["crawl"]["retries"] == 1 and report["crawl"]["robots_excluded"] == 1
    assert report["crawl"]["status_mix"] == {"200": expected["pages"], "404": 1}
    assert report["links"]["outside_share"] > 0  # the h7..h9 pages were never fetched
    assert report["trawl"]["fans"] == 4
    assert report["trawl"]["growth"][-1]["cores"] == {"3": 1, "4": 0}
    assert report["trawl"]["examples"]["3"][0][0] == sorted(report["trawl"]["examples"]["3"][0][0])
    assert report["load"]["nodes"] == ["n1", "n2"]
    assert sum(report["load"]["total_per_node"]) == expected["pages"] + 1
    assert set(report["bowtie"]["regions"]) == {"core", "in", "out", "tubes", "tendrils", "disconnected"}
    assert sum(report["bowtie"]["regions"].values()) == report["links"]["pages"]
    assert report["paper"]["in_degree_alpha"] == 1.86

    assert f"{expected['links']:>18}" in text.split("\n  links ")[1].split("\n")[0].rjust(40)
    assert f"K(3+,3) {report['trawl']['growth'][-1]['cores']['3']}" in text
    assert f"mean {report['paths']['mean_distance']:,.2f}" in text
    assert "documents: 1.86" in text and "2,280,000" in text

    page = (out / "report.html").read_text()
    assert sorted(report["plots"]) == ["bowtie.png", "cores.png", "degrees.png", "load.png"]
    for name in report["plots"]:
        png = (out / name).read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert base64.b64encode(png).decode() in page
    assert f"{expected['links']:,}" in page and "http" not in page.split("<style>")[0]


def test_default_report_directory_and_rerun(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _crawl(tmp_path)
    assert cli.main(["analyze", str(tmp_path)]) == 0
    first = json.loads((tmp_path / "report" / "report.json").read_text())
    assert cli.main(["analyze", str(tmp_path)]) == 0  # the report directory is not read as crawl data
    second = json.loads((tmp_path / "report" / "report.json").read_text())
    first.pop("timings_s"), second.pop("timings_s")
    assert first == second
    capsys.readouterr()


def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", str(tmp_path)]) == 2
    assert "holds no links.bin" in capsys.readouterr().err
    assert cli.main(["analyze", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert cli.main(["analyze", str(tmp_path), "--interval-s", "0"]) == 2
    assert "--interval-s" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["analyze", str(tmp_path), "--sample", "0"])


def test_a_corrupt_log_line_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _crawl(tmp_path)
    log = tmp_path / "nodes" / "n1" / "crawl.log.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:3] + ["{not json\n"] + lines[3:]))
    assert cli.main(["analyze", str(tmp_path)]) == 2
    assert "crawl.log.jsonl:4: not a JSON line" in capsys.readouterr().err
    (tmp_path / "report").write_text("a file where the report directory should go")
    log.write_text("".join(lines))
    assert cli.main(["analyze", str(tmp_path)]) == 2
    assert "cannot write the report" in capsys.readouterr().err


def test_analyze_is_registered() -> None:
    assert "webgather.commands.analyze" in cli.COMMAND_MODULES
