"""A host clock that arrives with a bucket from another node, applied here. Pure but for the journal.

Kept out of :mod:`webgather.frontier.frontier` for size; the frontier calls it once per host
of an imported bucket (:meth:`~webgather.frontier.frontier.Frontier.import_bucket`).
"""

from __future__ import annotations

from webgather.frontier.bucket import HostClock
from webgather.frontier.persist import Persistence
from webgather.frontier.policy import Politeness

__all__ = ["adopt_clock"]


def adopt_clock(policy: Politeness, accepted: dict[str, int], persist: Persistence | None,
                clock: HostClock, now: float) -> None:
    """The host's delay, error streak, IP group and remaining wait as the old owner left them;
    its accepted-page count never goes down (``max_pages_per_host`` holds across owners)."""
    st = policy.state(clock.host)
    st.crawl_delay_s, st.errors = clock.crawl_delay_s, clock.errors
    if clock.ip is not None:
        policy.set_host_ip(clock.host, clock.ip, now)
    policy.defer(clock.host, max(st.next_allowed_at, now + clock.wait_s), now)
    if clock.accepted:
        accepted[clock.host] = max(accepted.get(clock.host, 0), clock.accepted)
        if persist is not None:
            persist.accepted(clock.host, accepted[clock.host])
