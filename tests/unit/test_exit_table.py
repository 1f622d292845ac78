"""One table of exit codes (``webgather.exitcodes``): in ``--help``, in the README, and what the crawl's
outcomes map to (nothing fetched: 5, with one line; never a "None ms" figure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgather.cli import build_parser
from webgather.commands.report import cycle_exit_code, exit_code, print_cycle, print_summary
from webgather.exitcodes import ExitCode, table_text

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("command", [None, "crawl", "node", "recrawl"])
def test_help_ends_with_the_table(command: str | None) -> None:
    parser = build_parser(command)
    if command is not None:
        parser = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[index]
    assert table_text() in parser.format_help()


def test_the_readme_shows_the_table() -> None:
    assert table_text() in README.read_text()


def _summary(**figures: object) -> dict[str, object]:
    base: dict[str, object] = {"pages": 0, "wall_s": 1.0, "pages_per_s": 0.0, "cpu_ms_per_page": None,
                               "peak_rss_mib": 50.0, "status": {}, "errors": {}, "robots_fetches": 1, "retries": 0,
                               "links_found": 0, "urls_new": 1, "finished": True, "end": "done"}
    base.update(figures)
    return base


def test_a_crawl_whose_every_fetch_failed_exits_5_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    summary = _summary(errors={"robots_unavailable": 1})
    print_summary(summary)
    assert exit_code(summary) == ExitCode.NOTHING_FETCHED == 5
    out, err = capsys.readouterr()
    assert "None" not in out and "ms CPU/page" not in out
    assert err == "webgather: nothing fetched: no request got an answer (robots_unavailable 1)\n"


@pytest.mark.parametrize(("figures", "code"), [
    ({"status": {"404": 1}, "errors": {}}, ExitCode.DONE),  # an answer, if not a page
    ({"status": {"200": 3}, "errors": {"connect": 2}}, ExitCode.DONE),
    ({"status": {}, "errors": {"robots": 1}}, ExitCode.DONE),  # denied by robots.txt: no request was made
    ({"status": {}, "errors": {"dns": 1}, "losses": "DATA LOST: 3 URLs"}, ExitCode.DATA_LOST),
    ({"status": {}, "errors": {"dns": 1}, "interrupted": True}, ExitCode.INTERRUPTED),
])
def test_other_outcomes(figures: dict[str, object], code: ExitCode) -> None:
    assert exit_code(_summary(**figures)) == code


def _cycle(fetches: int, no_response: int, run_errors: dict[str, int], done: bool = True) -> dict[str, object]:
    counts = {"fetches": fetches, "no_response": no_response, "new_pages": 0, "revisits": fetches}
    return _summary(run_errors=run_errors, status={"200": 40}, recrawl={
        "cycle": 2, "policy": "optimal", "budget": None, "cycle_done": done, "counts": counts,
        "totals": {"urls": 40, "active": 40, "dead": 0}, "estimated_freshness": 1.0, "planned_revisits": 40,
        "dead_this_cycle": [], "dead": []})


def test_a_cycle_whose_fetches_all_failed_exits_5_without_a_freshness_figure(
        capsys: pytest.CaptureFixture[str]) -> None:
    for summary in (_cycle(0, 0, {"dns": 40}), _cycle(40, 40, {})):
        print_cycle(summary)
        assert cycle_exit_code(summary) == ExitCode.NOTHING_FETCHED
        out, err = capsys.readouterr()
        assert "freshness not measured" in out and "estimated freshness" not in out
        assert err.startswith("webgather: nothing fetched in cycle 2: no request got an answer")


def test_a_cycle_with_answers_or_nothing_due_exits_0_and_one_that_stopped_1() -> None:
    assert cycle_exit_code(_cycle(40, 39, {"dns": 1})) == ExitCode.DONE
    assert cycle_exit_code(_cycle(0, 0, {})) == ExitCode.DONE  # nothing was due
    assert cycle_exit_code(_cycle(3, 0, {}, done=False)) == ExitCode.NOT_ENDED


@pytest.mark.parametrize(("codes", "expected"), [
    ({"w0": 6, "w1": 0}, ExitCode.CANNOT_CONTINUE),
    ({"w0": 3, "w1": 6}, ExitCode.WRITE_FAILED),
    ({"w0": -9, "w1": 0}, ExitCode.NOT_ENDED),
])
def test_workers_exit_with_their_workers_reason_to_stop(codes: dict[str, int], expected: int,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from webgather.commands.node import _workers_exit_code

    summary = _summary(pages=5, status={"200": 5}, finished=False, exit_codes=codes,
                       nodes={name: {"end": "stopped" if code else "done"} for name, code in codes.items()})
    summary.pop("end")
    assert _workers_exit_code(summary) == expected
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == (0 if expected == ExitCode.NOT_ENDED else 1)
