"""The last bucket table a cluster node adopted, kept in its state directory for its next start.

A node restarted under its id reads the crawl's current table before its first heartbeat. The
buckets that table gives it and the one it last adopted did not were gained while it was away:
their state is elsewhere, and :meth:`~webgather.cluster.handoff.Ownership.resumed` has them awaited.
Without this file the node cannot tell them from the buckets its own store holds. One small JSON
file, replaced atomically at each adoption (tables change at joins, leaves and deaths only).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from webgather.cluster.mapping import BucketTable
from webgather.errors import ClusterError

__all__ = ["load_table", "save_table", "table_path"]

log = logging.getLogger(__name__)


def table_path(out_dir: Path) -> Path:
    return Path(out_dir) / "state" / "table.json"


def load_table(path: Path) -> BucketTable | None:
    """The table saved at ``path``; None if there is none or it cannot be read (said once)."""
    try:
        return BucketTable.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, ClusterError) as exc:
        log.warning("the last bucket table this node adopted (%s) is unreadable: %s", path, exc)
        return None


def save_table(path: Path, table: BucketTable) -> None:
    """Replace the saved table; a failure is said and leaves the file before it (this start is not
    affected; the next one may await fewer buckets than it should)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(table.to_dict()), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("cannot keep the bucket table this node adopted (%s): %s", path, exc)
