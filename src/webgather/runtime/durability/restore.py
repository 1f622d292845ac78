"""Recovering a dead node's buckets from its checkpoints in the shared store (its disk is gone).

Called by :func:`~webgather.runtime.durability.recovery.recover_node` when the
dead node's state directory cannot be read and the crawl has a shared store.
For each of the dead node's buckets it sends, on the bucket's stream and under
the dead node's id (the hand-off the new owner awaits), the bucket's last
checkpoint ``checkpoints/<dead>/<bucket>`` (written by
:mod:`webgather.runtime.durability.checkpoint`, already a hand-off from the dead node),
or an empty hand-off for a bucket that had no content at the dead node's last
checkpoint. A bucket the dead node did not hold at all then (it gained it in a table it
never released it in: it still awaited it) gets an *unheld* empty hand-off: its new owner
awaits the bucket's owner before the dead node instead, whose hand-off is still to come
(:meth:`~webgather.cluster.handoff.Ownership.redirect`). Everything the bucket received
after that checkpoint is still in its stream, un-acked: the new owner claims it before it
applies the hand-off's successors (``BucketKeeper._release``).

A node that never completed a checkpoint (no ``manifest.json``) loses
nothing either: it had acked nothing (:class:`~webgather.runtime.durability.checkpoint.HeldAcks`
keeps every ack until a checkpoint is stored), so every URL and hand-off it
received is still in its buckets' streams, and a link it queued in its own
bucket came from a page it fetched from those, fetched again by the new owner.
Its buckets get empty hand-offs (the new owners claim the streams first), and
``restored_from_streams`` counts them. A hand-off it was still owed (its giver
was held up, e.g. shipping WARCs to a full store) reaches the new owner after
that empty one, behind URL batches already applied; the merge does not depend
on the order (:meth:`~webgather.frontier.frontier.Frontier.import_bucket`), so
it unqueues the pages its giver had fetched. Only a checkpoint that is listed and
unreadable is a loss: ``unrecoverable_buckets`` counts those buckets.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from webgather.cluster.handoff import Ownership
from webgather.cluster.router import send_many
from webgather.cluster.transport import Coordinator, UrlTransport
from webgather.cluster.wire import Handoff, decode, encode_handoff
from webgather.errors import BackendUnavailable, ClusterError, StoreError
from webgather.frontier.bucket import BucketState
from webgather.runtime.durability.checkpoint import checkpoint_key, manifest_key
from webgather.store.shared import SharedStore, open_store

__all__ = ["restore_awaited", "restore_from_store"]

SEND_CHUNK = 256
READ_THREADS = 16
"""Checkpoints read at once (an object store answers each GET in tens of milliseconds)."""
log = logging.getLogger(__name__)


def _read(store: SharedStore, dead: str, buckets: tuple[int, ...]) -> tuple[dict[str, Any] | None, dict[int, bytes]]:
    raw = store.get_bytes(manifest_key(dead))
    if raw is None:
        return None, {}
    try:
        manifest = json.loads(raw)
        listed = {int(b) for b in manifest["buckets"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"checkpoint manifest of {dead} is unreadable: {exc}") from None
    wanted = [b for b in buckets if b in listed] if buckets else sorted(listed)
    with ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="wg-restore") as pool:
        payloads = list(pool.map(lambda b: store.get_bytes(checkpoint_key(dead, b)), wanted))
    return manifest, {b: p for b, p in zip(wanted, payloads, strict=True) if p is not None}


def _payload(dead: str, bucket: int, n_buckets: int, payload: bytes | None,
             unheld: bool = False) -> tuple[bytes, int | None]:
    """The hand-off to send for ``bucket`` and its item count; None for a checkpoint that is
    unreadable or not the dead node's hand-off of that bucket (the bucket then starts empty).
    ``unheld``: the dead node's last manifest says it did not hold the bucket (:func:`_unheld`)."""
    empty = encode_handoff(dead, 0, BucketState(bucket, n_buckets))
    if payload is None:
        return (encode_handoff(dead, 0, BucketState(bucket, n_buckets), unheld=True) if unheld else empty), 0
    try:
        message = decode(payload)
    except ClusterError as exc:
        log.warning("checkpoint %s is unreadable (%s): bucket %d starts empty", checkpoint_key(dead, bucket),
                    exc, bucket)
        return empty, None
    if not isinstance(message, Handoff) or message.sender != dead or message.state.bucket != bucket:
        log.warning("checkpoint %s is not %s's hand-off of bucket %d: the bucket starts empty",
                    checkpoint_key(dead, bucket), dead, bucket)
        return empty, None
    return payload, len(message.state.items)


def _unheld(manifest: dict[str, Any] | None) -> Callable[[int], bool]:
    """Whether a bucket was not held at all by the node at its last checkpoint (the manifest's ``held``:
    every bucket it owned and had released, content or not). Such a bucket was gained in a table the
    node never released it in: its state is still with the owner before, whose hand-off is to come.
    Unknown (no checkpoint, or a manifest without ``held``): False, the bucket is restored empty."""
    if manifest is None or not isinstance(manifest.get("held"), list):
        return lambda _bucket: False
    held = {int(b) for b in manifest["held"] if isinstance(b, int)}
    return lambda bucket: bucket not in held


async def restore_from_store(dead: str, buckets: tuple[int, ...], *, store_url: str, n_buckets: int,
                             transport: UrlTransport, coordinator: Coordinator) -> dict[str, Any]:
    """Send ``dead``'s buckets from its checkpoints (module docstring); returns what was done.
    ``buckets`` empty: every bucket its last manifest lists."""
    try:  # an unreachable store is retried like Redis (the lease loop comes back to the recovery)
        store = await asyncio.to_thread(open_store, store_url)
        manifest, found = await asyncio.to_thread(_read, store, dead, buckets)
    except StoreError as exc:
        raise BackendUnavailable(f"shared store: {exc}") from None
    wanted = buckets or tuple(sorted(found))
    messages, items, bad = [], 0, 0
    unheld = _unheld(manifest)
    for bucket in wanted:
        payload, count = _payload(dead, bucket, n_buckets, found.get(bucket), unheld(bucket))
        messages.append((bucket, payload))
        items += count or 0
        bad += count is None
    for start in range(0, len(messages), SEND_CHUNK):
        await send_many(transport, messages[start:start + SEND_CHUNK])
    if manifest is None:
        await coordinator.incr("restored_from_streams", len(wanted))
        return {"node": dead, "buckets": len(wanted), "from": "bucket streams: no checkpoint yet"}
    for name, value in (("restored_buckets", len(found) - bad), ("restored_items", items),
                        ("unrecoverable_buckets", bad)):
        if value:
            await coordinator.incr(name, value)
    return {"node": dead, "buckets": len(wanted), "restored_buckets": len(found) - bad, "items": items,
            "unrecoverable_buckets": bad,
            "checkpoint_version": manifest.get("version"), "from": "shared store"}


async def restore_awaited(ownership: Ownership, alive: set[str], now: float, grace_s: float, *, store_url: str,
                          n_buckets: int, transport: UrlTransport, coordinator: Coordinator) -> list[dict[str, Any]]:
    """Buckets this node awaits from a node that is gone (:meth:`Ownership.gone`): send their states
    from its checkpoints on their streams, where the receive loop takes them as the awaited hand-off.

    The coordinator recovers only the buckets a dead node owns in the table; one it had already lost
    in a new table (a join) and not yet handed over is awaited here, and nobody else knows it. On the
    stream (not imported directly) the restored state stays un-acked until this node's next
    checkpoint: if this node dies first, the next owner claims it."""
    outcomes = []
    for sender, buckets in ownership.gone(now, grace_s, alive).items():
        try:
            outcomes.append(await restore_from_store(sender, tuple(buckets), store_url=store_url,
                                                     n_buckets=n_buckets, transport=transport, coordinator=coordinator))
        except BackendUnavailable as exc:  # the store or Redis: tried again at the next beat
            log.warning("cannot restore the buckets awaited from %s yet: %s", sender, exc)
            continue
        log.warning("%d buckets awaited from %s, which is gone or will not send them: restored from its "
                    "checkpoints and streams",
                    len(buckets), sender)
        ownership.restored(buckets)
    return outcomes
