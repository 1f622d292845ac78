"""Helpers any test may import (``tests/`` is on pytest's pythonpath)."""

from __future__ import annotations

import os
from pathlib import Path


def own_redis_servers() -> list[int]:
    """PIDs of redis-server processes that are children of this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            exe = os.readlink(entry / "exe")  # not cmdline: redis-server rewrites its process title
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if exe.endswith("redis-server") and parent == str(os.getpid()):
            found.append(int(entry.name))
    return found
