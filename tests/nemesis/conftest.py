"""The nemesis reuses the cluster tests' helpers (tests/cluster), which pytest puts on sys.path only
when it collects a test there."""

from __future__ import annotations

import sys
from pathlib import Path

CLUSTER = str(Path(__file__).resolve().parents[1] / "cluster")
if CLUSTER not in sys.path:
    sys.path.insert(0, CLUSTER)
