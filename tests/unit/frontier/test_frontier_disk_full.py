"""The frontier's SQLite on a full disk: a failed commit is WriteFailed, and none follows it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from webgather.errors import WriteFailed
from webgather.frontier.store import StateDB


def test_after_a_failed_commit_the_state_db_commits_nothing(tmp_path: Path) -> None:
    path = tmp_path / "frontier.db"
    db = StateDB(path)
    db.set_meta("kept", 1)
    db.commit()
    pages = db.conn.execute("PRAGMA page_count").fetchone()[0]
    db.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLite's own "disk full"
    db.journal_seen(np.arange(200_000, dtype=np.uint64))
    with pytest.raises(WriteFailed, match="disk full: cannot commit frontier state .*frontier.db.*SQLITE_FULL"):
        db.commit()
    db.conn.execute("PRAGMA max_page_count = 1000000")
    db.set_meta("journal_gen", 9)  # what a later checkpoint would record...
    with pytest.raises(WriteFailed, match="disk full"):
        db.commit()  # ...over rows the failed commit may have rolled back: refused
    db.conn.close()
    again = StateDB(path)
    assert again.meta("kept") == "1" and again.meta("journal_gen") is None
    again.close()
