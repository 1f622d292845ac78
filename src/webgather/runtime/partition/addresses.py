"""Host addresses shared by a cluster's nodes: the partition key of ``--partition-by ip``.

The documents partition by ``DNS(host)``. Each node resolves hosts with its
own resolver (the ``--resolve`` file if given, else DNS), but nodes must agree
on every host's key or two of them would crawl one address (and the per-IP cap
would not hold cluster-wide). So a node publishes what it resolved to the
crawl's :class:`~webgather.cluster.transport.AddressBook` (set-if-absent:
the first answer published for a host wins) and uses the *stored* answer,
whatever its own resolver said. It also pins that answer in its resolver, so
it connects where the partition says the host is, and the per-IP politeness
of its frontier counts the same address.

A host that does not resolve is published as ``""`` and keyed by its name
(every node then agrees on that too). Answers never change during a crawl
(first wins), so the local copy is a plain dict, never stale.

Who asks: the router, for a link whose host it does not know (the link waits
for a batched :meth:`SharedAddresses.learn`, see
:class:`~webgather.cluster.router.Router`); the bucket keeper, before it
applies batches and hand-offs made by other nodes (:meth:`prepare`); the node
at start (:meth:`refresh`, before its frontier is opened from disk: the
frontier files every host under ``bucket_of(key)``), and before recovering a
dead node's state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from webgather.cluster.router import RETRY_MAX_S, RETRY_MIN_S
from webgather.cluster.transport import AddressBook, Delivery
from webgather.cluster.wire import Handoff, UrlBatch, decode
from webgather.errors import BackendUnavailable, ClusterError, WebgatherError
from webgather.fetch.resolver import Resolver
from webgather.urls import host_key, hostname

__all__ = ["UNRESOLVED", "SharedAddresses"]

log = logging.getLogger(__name__)

UNRESOLVED = ""
"""The published answer for a host that did not resolve: it is keyed by its name."""
RESOLVE_CONCURRENCY = 64


def _name(host: str) -> str:
    """The host name of a host key (``host[:port]``): what is resolved and published."""
    return hostname("http://" + host + "/")


class SharedAddresses:
    """One node's copy of the crawl's published addresses (module docstring)."""

    def __init__(self, book: AddressBook, resolver: Resolver | None = None) -> None:
        self.book = book
        self.resolver = resolver
        """Given once the node's parts are open (:meth:`use_resolver`; the frontier, opened first, needs
        :meth:`refresh` only)."""
        self.by_name: dict[str, str] = {}
        self.published = 0
        """Answers this node published that became the crawl's (it resolved the host first)."""

    def key(self, host: str) -> str | None:
        """The partition key of a host key, or None if its address is not known here yet."""
        address = self.by_name.get(_name(host))
        if address is None:
            return None
        return address or host

    def frontier_key(self, host: str) -> str:
        """:meth:`key` for the frontier, which only ever sees hosts already learned."""
        key = self.key(host)
        if key is None:  # a wrong bucket would silently split a host between nodes: fail loudly
            raise ClusterError(f"no shared address known for host {host!r} (it was never routed)")
        return key

    async def refresh(self) -> None:
        """Copy every published answer (at start, and before recovering a dead node's state)."""
        self._adopt(await self.book.get_addresses())

    async def learn(self, hosts: Sequence[str]) -> None:
        """Make the key of every host key in ``hosts`` known: stored answers first, then
        resolve the rest here and publish them (the first published wins). May raise
        :class:`~webgather.errors.BackendUnavailable`; the caller retries."""
        names = list(dict.fromkeys(_name(h) for h in hosts if _name(h) not in self.by_name))
        if not names:
            return
        self._adopt(await self.book.get_addresses(names))
        missing = [n for n in names if n not in self.by_name]
        if missing:
            mine = dict(zip(missing, await self._resolve(missing), strict=True))
            stored = await self.book.publish_addresses(mine)
            self.published += sum(stored[n] == mine[n] for n in missing)
            self._adopt(stored)

    async def prepare(self, deliveries: Iterable[Delivery]) -> None:
        """Learn the hosts of batches and hand-offs before they are applied (retrying while the
        backend is away: the deliveries stay unacked meanwhile)."""
        hosts: set[str] = set()
        for delivery in deliveries:
            try:
                message = decode(delivery.payload)
            except ClusterError:
                continue  # the keeper drops and counts it
            if isinstance(message, UrlBatch):
                hosts.update(host_key(item.url) for item in message.items)
            elif isinstance(message, Handoff):
                hosts.update(host_key(item.url) for item in message.state.items)
                hosts.update(clock.host for clock in message.state.hosts)
                hosts.update(host_key(row.url) for row in message.rows)  # re-crawl rows: filed by bucket
        await learn_retrying(self, sorted(hosts))

    async def _resolve(self, names: list[str]) -> list[str]:
        if self.resolver is None:
            raise ClusterError("shared addresses: no resolver yet")
        resolver, slots = self.resolver, asyncio.Semaphore(RESOLVE_CONCURRENCY)

        async def one(name: str) -> str:
            async with slots:
                try:
                    return await resolver.resolve(name)
                except WebgatherError:
                    return UNRESOLVED
        return list(await asyncio.gather(*(one(n) for n in names)))

    def _adopt(self, stored: dict[str, str]) -> None:
        for name, address in stored.items():
            self.by_name[name] = address
            if address and self.resolver is not None:
                self.resolver.pin(name, address)

    def use_resolver(self, resolver: Resolver) -> None:
        """Resolve new hosts with ``resolver`` from now on (a node's, once its parts are open)."""
        self.resolver = resolver

    def pin_all(self) -> None:
        """Pin every known answer in the resolver (once it is set, after a :meth:`refresh`)."""
        self._adopt(dict(self.by_name))


async def learn_retrying(addresses: SharedAddresses, hosts: Sequence[str]) -> None:
    """:meth:`SharedAddresses.learn` until it succeeds (the backend may be away a while)."""
    wait_s = RETRY_MIN_S
    while True:
        try:
            await addresses.learn(hosts)
            return
        except BackendUnavailable:
            await asyncio.sleep(wait_s)
            wait_s = min(RETRY_MAX_S, wait_s * 2)
        except WebgatherError as exc:  # unexpected: say so, keep trying (a lost link is worse)
            log.warning("webgather: learning host addresses failed: %s; retrying", exc)
            await asyncio.sleep(RETRY_MAX_S)
