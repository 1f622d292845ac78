"""The one table of webgather's exit codes, the same on every path.

Every way a crawl starts (``crawl``, ``crawl --redis``, ``crawl --workers``, ``node``,
``recrawl``, ``crawl --continuous``, the API's ``Crawl(...).run()``) ends with one of these,
and the README and ``webgather --help`` print this table (:func:`table_text`), so the
three cannot drift apart. A code above 0 always comes with one line on stderr that
says why (``commands.report.exit_line``).
"""

from __future__ import annotations

import enum

__all__ = ["MEANINGS", "ExitCode", "help_epilog", "table_text"]


class ExitCode(enum.IntEnum):
    """Why a command ended. The values are a public interface: never renumber one."""

    DONE = 0
    NOT_ENDED = 1
    USAGE = 2
    WRITE_FAILED = 3
    DATA_LOST = 4
    NOTHING_FETCHED = 5
    CANNOT_CONTINUE = 6
    INTERRUPTED = 130


MEANINGS: dict[ExitCode, str] = {
    ExitCode.DONE: "done: the crawl finished, a --max-pages limit ended it, or SIGTERM stopped it "
                   "gracefully (the same command resumes)",
    ExitCode.NOT_ENDED: "the crawl or re-crawl cycle did not end: a worker or node died or stopped before "
                        "the end, or a cycle stopped (it continues on the next run)",
    ExitCode.USAGE: "a bad command line, config or seed: one line, nothing started",
    ExitCode.WRITE_FAILED: "a write failed (disk full, quota, I/O error): stopped, what is stored is whole; "
                           "run the same command once there is room",
    ExitCode.DATA_LOST: "the crawl ended but could not keep or recover some URLs: a DATA LOST line "
                        "with the exact count",
    ExitCode.NOTHING_FETCHED: "nothing was fetched: every fetch of the run (or of the re-crawl cycle; on a "
                              "cluster node, of every node) failed, e.g. every seed's host is unreachable",
    ExitCode.CANNOT_CONTINUE: "a cluster node could not go on: its backend stayed unreachable past "
                              "max_outage_s or lost its data, or the shared store stayed unusable; "
                              "its state is kept",
    ExitCode.INTERRUPTED: "Ctrl-C (SIGINT), or SIGTERM before a crawl's own handling began: summary printed, "
                          "state kept; run the same command to resume",
}


def table_text() -> str:
    """The table as plain lines, ``CODE  meaning``, for ``--help`` and the README."""
    return "\n".join(f"{code.value:>3}  {MEANINGS[code]}" for code in ExitCode)


def help_epilog() -> str:
    """What ``webgather --help`` and the crawling commands' ``--help`` end with (with a raw-description formatter)."""
    return f"exit codes (the same on every path):\n{table_text()}"
