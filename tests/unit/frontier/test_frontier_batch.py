"""frontier.batch.item_keys: the Python path for small batches gives seen_keys' answer and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.errors import FrontierError
from webgather.frontier.batch import item_fingerprints, item_keys
from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import SMALL_BATCH, seen_keys

_FPS = st.integers(0, 2**64 - 1) | st.sampled_from([0, 2**52 - 1, 2**52, 2**63, 2**64 - 1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4095), _FPS), max_size=2 * SMALL_BATCH + 2))
def test_item_keys_are_seen_keys(pairs: list[tuple[int, int]]) -> None:
    buckets = [b for b, _ in pairs]
    items = [CrawlItem(f"http://h{i}.test/", fp) for i, (_, fp) in enumerate(pairs)]
    want = seen_keys(np.array(buckets, dtype=np.uint64), item_fingerprints(items))
    got = item_keys(buckets, items)
    assert got.dtype == np.uint64 and got.tolist() == want.tolist()


@pytest.mark.parametrize("size", [1, SMALL_BATCH + 1])
def test_item_keys_reject_what_seen_keys_rejects(size: int) -> None:
    good = [CrawlItem(f"http://h{i}.test/", i) for i in range(size - 1)]
    for fp in (-1, 2**64):
        with pytest.raises(FrontierError):
            item_keys([0] * size, [*good, CrawlItem("http://bad.test/", fp)])
    for odd in (1.5, np.uint64(7), True):  # not a plain int: whatever the numpy path makes of it
        items = [*good, CrawlItem("http://odd.test/", odd)]  # type: ignore[arg-type]
        want = seen_keys(np.zeros(size, dtype=np.uint64), item_fingerprints(items))
        assert item_keys([0] * size, items).tolist() == want.tolist()
    with pytest.raises(ValueError, match="bucket 4096"):
        item_keys([0] * (size - 1) + [4096], [*good, CrawlItem("http://b.test/", 1)])
    assert item_keys([np.uint64(3)] * size, [*good, CrawlItem("http://c.test/", 9)]).tolist()[-1] == (3 << 52) | 9  # type: ignore[list-item]
