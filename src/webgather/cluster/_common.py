"""Argument checks and JSON rules shared by both cluster backends. Pure.

Both backends must reject the same bad input with the same error, so the
contract suite can hold them to one behaviour; the checks live here once.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from webgather.cluster.mapping import BucketTable
from webgather.errors import ClusterError, IncompatibleCrawl

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "check_addresses",
    "check_buckets",
    "check_cas",
    "check_count",
    "check_counter",
    "check_crawl_name",
    "check_hosts",
    "check_ids",
    "check_node",
    "check_permits",
    "check_seconds",
    "from_json",
    "mapping_json",
    "rotate",
    "settings_mismatch",
    "to_json",
]

_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def check_crawl_name(crawl: str) -> str:
    """A crawl name usable inside key names (``wg:{crawl}:``)."""
    if not isinstance(crawl, str) or not _SAFE_NAME.fullmatch(crawl):
        raise ClusterError(f"crawl name must be 1-64 of [A-Za-z0-9._-], got {crawl!r}")
    return crawl


def check_node(node: str) -> str:
    """A node id: 1-64 of ``[A-Za-z0-9._-]``, not ``.`` or ``..``.

    The id names the node's directory (``OUT/nodes/<id>``), so it must be one
    safe path component: ``..`` would write into ``OUT`` itself, a ``/`` elsewhere.
    """
    if not isinstance(node, str) or not _SAFE_NAME.fullmatch(node) or node in (".", ".."):
        raise ClusterError(f"node id must be 1-64 of [A-Za-z0-9._-] and not '.' or '..', got {node!r}")
    return node


def check_buckets(buckets: Sequence[int], n_buckets: int) -> list[int]:
    """``buckets`` as a list of ints in ``0..n_buckets-1`` (duplicates removed, order kept)."""
    if isinstance(buckets, (str, bytes)) or not isinstance(buckets, Iterable):
        raise ClusterError(f"buckets must be a sequence of ints, got {type(buckets).__name__}")
    out = list(buckets)
    # whole-list checks, not a loop of isinstance: a node owning every one of 4096 buckets asks
    # for them all several times a second (7 ms a call the old way; a few % of a one-node crawl)
    if not all(type(bucket) is int for bucket in out) or (out and not 0 <= min(out) <= max(out) < n_buckets):
        bad = next(b for b in out if type(b) is not int or not 0 <= b < n_buckets)
        raise ClusterError(f"bucket {bad!r} outside 0..{n_buckets - 1}")
    return out if len(set(out)) == len(out) else list(dict.fromkeys(out))


def check_ids(ids: Sequence[str]) -> list[str]:
    """Delivery ids as a list of str (a lone string or a non-sequence is an error)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise ClusterError(f"delivery ids must be a sequence of str, got {type(ids).__name__}")
    out = list(ids)
    if not all(isinstance(i, str) for i in out):
        raise ClusterError("delivery ids must be strings")
    return out


def check_seconds(name: str, value: float, positive: bool = False) -> float:
    """A finite duration >= 0 (> 0 with ``positive``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (positive and value == 0):
        raise ClusterError(f"{name} must be a finite number {'>' if positive else '>='} 0, got {value!r}")
    return float(value)


def check_count(name: str, value: int) -> int:
    """A count >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ClusterError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def check_cas(expected_version: int | None, new: BucketTable, current: BucketTable | None) -> None:
    """Raise ClusterError if a CAS from ``expected_version`` to ``new`` is malformed
    (a version that does not increase, or a different bucket count)."""
    if not isinstance(new, BucketTable):
        raise ClusterError(f"cas_table needs a BucketTable, got {type(new).__name__}")
    if expected_version is not None and (isinstance(expected_version, bool)
                                         or not isinstance(expected_version, int)):
        raise ClusterError(f"expected_version must be an int or None, got {expected_version!r}")
    if expected_version is not None and new.version <= expected_version:
        raise ClusterError(f"new table version {new.version} must exceed {expected_version}")
    if current is not None and current.n_buckets != new.n_buckets:
        raise ClusterError(f"table has {new.n_buckets} buckets, the crawl has {current.n_buckets}")


def to_json(value: Any, what: str) -> str:
    """Canonical JSON text of ``value`` (sorted keys); non-JSON values raise ClusterError."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ClusterError(f"{what} must be JSON values: {exc}") from None


def from_json(text: str | bytes, what: str) -> Any:
    """Parse JSON stored by :func:`to_json`; corrupt text raises ClusterError."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ClusterError(f"stored {what} is not valid JSON: {exc}") from None


def settings_mismatch(stored: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """Raise IncompatibleCrawl naming every key whose value differs (or is missing on one side)."""
    keys = sorted(k for k in set(stored) | set(given)
                  if k not in stored or k not in given or stored[k] != given[k])
    if keys:
        detail = ", ".join(f"{k}: crawl has {stored.get(k, '<unset>')!r}, node has {given.get(k, '<unset>')!r}"
                           for k in keys)
        raise IncompatibleCrawl(f"settings differ from the crawl's ({detail})")


def mapping_json(value: Mapping[str, Any], what: str) -> tuple[str, dict[str, Any]]:
    """Canonical text and JSON-normalized copy of a mapping with str keys (settings, info)."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ClusterError(f"{what} must be a mapping with string keys")
    text = to_json(dict(value), what)
    return text, from_json(text, what)


def rotate(items: list[int], turn: int) -> list[int]:
    """``items`` rotated left by ``turn`` (mod length): fair start for round-robin reads."""
    if not items:
        return items
    k = turn % len(items)
    return items[k:] + items[:k]


def check_counter(name: str, n: int) -> None:
    """A counter name (non-empty string) and a 64-bit integer increment."""
    if not isinstance(name, str) or not name:
        raise ClusterError(f"counter name must be a non-empty string, got {name!r}")
    if isinstance(n, bool) or not isinstance(n, int) or not INT64_MIN <= n <= INT64_MAX:
        raise ClusterError(f"counter increment must be a 64-bit integer, got {n!r}")


def check_hosts(hosts: Sequence[str]) -> list[str]:
    """Host names as a list of non-empty str (a lone string or a non-sequence is an error)."""
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, Iterable):
        raise ClusterError(f"hosts must be a sequence of str, got {type(hosts).__name__}")
    out = list(dict.fromkeys(hosts))
    if not all(isinstance(h, str) and h for h in out):
        raise ClusterError("hosts must be non-empty strings")
    return out


def check_addresses(answers: Mapping[str, str]) -> dict[str, str]:
    """``host -> address`` answers: non-empty str hosts, str addresses (any text: the caller's)."""
    if not isinstance(answers, Mapping):
        raise ClusterError(f"addresses must be a mapping of str to str, got {type(answers).__name__}")
    check_hosts(list(answers))
    if not all(isinstance(a, str) for a in answers.values()):
        raise ClusterError("addresses must be strings")
    return dict(answers)


def check_permits(name: str, limit: int, n: int) -> None:
    """A counter name, a 64-bit limit and a count >= 1 of permits to take."""
    check_counter(name, limit)
    check_count("n", n)
