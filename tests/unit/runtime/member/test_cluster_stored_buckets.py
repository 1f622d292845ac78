"""stored_buckets: which buckets a node's frontier holds anything of (hosts or seen keys)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from webgather.runtime.member.buckets import stored_buckets


class CountingSeen:
    def __init__(self, keys_by_bucket: dict[int, int]) -> None:
        self.keys_by_bucket = keys_by_bucket
        self.exports = 0

    def __len__(self) -> int:
        return sum(self.keys_by_bucket.values())

    def export_bucket(self, bucket: int) -> Any:
        self.exports += 1
        return np.zeros(self.keys_by_bucket.get(bucket, 0), dtype=np.uint64)


def parts(seen: CountingSeen, hosts: dict[int, set[str]]) -> Any:
    return SimpleNamespace(frontier=SimpleNamespace(n_buckets=4096, hosts_of_bucket=hosts, seen=seen))


def test_a_fresh_node_exports_no_bucket_of_its_empty_seen_set() -> None:
    seen = CountingSeen({})
    assert stored_buckets(parts(seen, {})) == []
    assert stored_buckets(parts(seen, {12: {"a"}, 3: {"b"}, 5: set()})) == [3, 12]  # hosts only, in order
    assert seen.exports == 0  # was 4096 a call: 0.2-0.3 s of every --workers node's start


def test_buckets_with_seen_keys_or_hosts_are_all_found() -> None:
    seen = CountingSeen({5: 2, 4095: 1})
    assert stored_buckets(parts(seen, {7: {"h"}, 9: set()})) == [5, 7, 4095]
