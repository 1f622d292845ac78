"""Helpers for the replay tests: find pywb, run ``webgather replay``, read WARC payloads, fetch from loopback."""

from __future__ import annotations

import http.client
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")


def find_wayback() -> str | None:
    """pywb's ``wayback``: $WEBGATHER_PYWB, the repo's .venv-replay (scripts/setup), or PATH."""
    given = os.environ.get("WEBGATHER_PYWB")
    candidates = [given] if given else []
    candidates.append(str(REPO / ".venv-replay" / "bin" / "wayback"))
    for candidate in candidates:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("wayback")


@dataclass
class Replay:
    """A running ``webgather replay`` process and what it printed."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def read_until(self, prefix: str, timeout_s: float) -> str:
        while True:
            try:
                line = self._queue.get(timeout=timeout_s)
            except queue.Empty:
                raise AssertionError(f"no {prefix!r} line within {timeout_s} s; last lines {self.lines[-20:]}") from None
            if line is None:
                raise AssertionError(f"replay exited ({self.process.poll()}) before {prefix!r}; last lines {self.lines[-20:]}")
            self.lines.append(line)
            if line.startswith(prefix):
                return line

    def drain(self, timeout_s: float = 10.0) -> None:
        """Read what is left of the output (after the process ended) into ``lines``."""
        try:
            while (line := self._queue.get(timeout=timeout_s)) is not None:
                self.lines.append(line)
        except queue.Empty:
            self.lines.append(f"(output still open after {timeout_s} s)")

    def line(self, prefix: str) -> str:
        """A line already read that starts with ``prefix``."""
        found = [line for line in self.lines if line.startswith(prefix)]
        assert found, f"no {prefix!r} line in {self.lines[:20]}"
        return found[0]

    def children(self) -> list[int]:
        pid = self.process.pid
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        return [int(p) for p in text.split()]


def start_replay(crawl_dir: Path, wayback: str) -> Replay:
    command = [sys.executable, "-m", "webgather", "replay", str(crawl_dir), "--port", "0", "--pywb", wayback]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )
    replay = Replay(process)
    threading.Thread(target=_pump, args=(process, replay._queue), daemon=True).start()
    return replay


def _pump(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def stop_replay(replay: Replay, children: list[int]) -> int:
    """Ctrl-C (SIGINT to its PID); its exit status. Kills it and pywb by PID if they linger."""
    process = replay.process
    try:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        return process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in children:  # first: pywb holds the output pipe open
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        replay.drain()
        assert process.stdout is not None
        process.stdout.close()


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def archived_pages(crawl_dir: Path) -> dict[tuple[str, str], list[bytes]]:
    """(14-digit timestamp, URL) -> the payloads (entity bodies as archived) of its 200 responses."""
    from warcio.archiveiterator import ArchiveIterator

    from webgather.store.cdxj import timestamp14

    pages: dict[tuple[str, str], list[bytes]] = defaultdict(list)
    for path in sorted(crawl_dir.rglob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type != "response" or record.http_headers.get_statuscode() != "200":
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                stamp = timestamp14(record.rec_headers.get_header("WARC-Date"))
                pages[(stamp, url)].append(record.raw_stream.read())
    return pages


def fetch(url: str, timeout_s: float = 30.0) -> tuple[int, bytes, bool]:
    """(status, body, complete) of a GET on loopback, no proxy; complete is False when the body is
    shorter than its Content-Length (pywb replays a truncated record's original header)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})  # the bytes as archived
    try:
        with opener.open(request, timeout=timeout_s) as response:
            try:
                return response.status, response.read(), True
            except http.client.IncompleteRead as cut:
                return response.status, cut.partial, False
    except urllib.error.HTTPError as error:
        return error.code, error.read(), True


def chromium(args: list[str], user_dir: Path, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Debian's chromium, headless, kept to loopback: no DNS but 127.0.0.1, no background traffic."""
    command = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--no-default-browser-check", f"--user-data-dir={user_dir}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--window-size=1024,768", *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)


def ink_share(png: Path, top_px: int) -> float:
    """Share of dark pixels (luminance < 128) below ``top_px``: 0 for a blank page."""
    from PIL import Image

    with Image.open(png) as image:
        gray = image.convert("L")
        width, height = gray.size
        body = gray.crop((0, top_px, width, height))
        histogram = body.histogram()
    return sum(histogram[:128]) / max(1, sum(histogram))


def revisit_targets(crawl_dir: Path) -> list[tuple[str, str, str, bytes]]:
    """(timestamp, URL, HTTP status in the revisit, the original's payload) of every revisit record
    whose original is a 200 response."""
    from warcio.archiveiterator import ArchiveIterator

    from webgather.store.cdxj import timestamp14

    originals: dict[str, bytes] = {}
    revisits: list[tuple[str, str, str, str]] = []
    for path in sorted(crawl_dir.rglob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                headers = record.rec_headers
                if record.rec_type == "response" and record.http_headers.get_statuscode() == "200":
                    originals[headers.get_header("WARC-Record-ID")] = record.raw_stream.read()
                elif record.rec_type == "revisit":
                    stamp = timestamp14(headers.get_header("WARC-Date"))
                    status = record.http_headers.get_statuscode() if record.http_headers else "-"
                    revisits.append((stamp, headers.get_header("WARC-Target-URI"), status, headers.get_header("WARC-Refers-To")))
    return [(stamp, url, status, originals[refers]) for stamp, url, status, refers in revisits if refers in originals]


def index_by_record(lines: list[str]) -> dict[tuple[str, str, str, str], dict[str, str]]:
    """CDXJ lines as {(key, timestamp, filename, offset): JSON block}."""
    import json

    out: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for line in lines:
        key, stamp, text = line.rstrip("\n").split(" ", 2)
        block = json.loads(text)
        out[(key, stamp, block["filename"], block["offset"])] = block
    return out


def pywb_index(wayback: str, warc_dir: Path) -> list[str]:
    """What pywb's own indexer (``cdx-indexer -j``, beside ``wayback``) writes for the WARCs of ``warc_dir``."""
    indexer = Path(wayback).parent / "cdx-indexer"
    files = sorted(p.name for p in warc_dir.glob("*.warc.gz"))
    done = subprocess.run([str(indexer), "-j", *files], cwd=warc_dir, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines(keepends=True)
