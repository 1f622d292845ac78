"""Small hand-made link graphs for the simulator's tests."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from webgather.linkgraph import LinkGraph


def make_graph(edges: Sequence[tuple[int, int]], page_host: Sequence[int],
               fetched: Sequence[bool] | None = None, urls: Sequence[str] | None = None) -> LinkGraph:
    """A LinkGraph from ``(src, dst)`` pairs; host names are ``h<i>.test``."""
    src = np.array([s for s, _ in edges], dtype=np.int64)
    dst = np.array([d for _, d in edges], dtype=np.int64)
    hosts = np.array(page_host, dtype=np.int64)
    names = tuple(f"h{i}.test" for i in range(int(hosts.max()) + 1))
    done = np.ones(hosts.size, dtype=bool) if fetched is None else np.array(fetched, dtype=bool)
    return LinkGraph(src, dst, hosts, names, done, tuple(urls) if urls is not None else None)


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    """OpenBLAS threads oversubscribe the shared cores and slow scipy's optimizers 10x."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
