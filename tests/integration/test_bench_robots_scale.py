"""bench/robots_scale.py at toy size: more hosts than robots.max_hosts, one robots.txt request each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "robots_scale.py"


def test_robots_scale_toy_run_fetches_every_page_with_one_robots_request_per_host(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--toy", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["hosts"] == 60 and figures["pages"] == figures["pages_due"] == 180
    assert figures["robots_requests"] == 60 and figures["robots_max_per_host"] == 1
    assert figures["robots_sqlite_kib"] > 0
