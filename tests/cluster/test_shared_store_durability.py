"""The durability invariant with a shared store: 3 node processes with separate --out directories;
one is killed -9 mid-crawl and its --out deleted. Every URL of the closure that has a response must
end with a response record in a surviving WARC (shared store or a surviving node's directory), and
the pages fetched twice are at most what the lost node started since its last checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
from durability_helpers import run_scenario

from s3_helpers import moto_s3


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["file", "s3"])
async def test_kill_9_and_delete_of_a_node_loses_no_page(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        outcome = await run_scenario(tmp_path, (tmp_path / "shared").as_uri())
    else:
        with moto_s3("wg-durability"):
            outcome = await run_scenario(tmp_path, "s3://wg-durability/crawl")
    print(outcome.row(), outcome.counters)
    assert outcome.exit_codes == {"a": 0, "b": -9, "c": 0}
    assert outcome.missing == [], outcome.row()
    assert outcome.archived == outcome.closure > 100
    assert outcome.refetched <= outcome.bound, outcome.row()
    assert outcome.counters.get("restored_buckets", 0) > 0
    assert outcome.counters.get("unrecoverable_buckets", 0) == 0
    assert outcome.cdxj_mismatch == []
