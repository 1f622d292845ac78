"""The cluster: partitioning hosts over nodes, cross-URL transport, membership.

Inputs: links whose host a node does not own (from the router), membership
events (join, leave, heartbeat expiry). Outputs: URL batches delivered to the
owning node's seen-test, and a versioned bucket table every node agrees on.
Called by ``runtime``; calls ``frontier`` only for its value types.

* ``mapping`` (pure): host -> bucket -> node; join/leave plans.
* ``wire`` (pure): URL batches and bucket hand-offs <-> bytes.
* ``transport`` (pure): the protocols ``UrlTransport`` (per-bucket streams,
  at-least-once with ack and ``claim_stale``) and ``Coordinator`` (bucket table
  CAS, heartbeats, lease, crawl settings, counters), and ``Backend``.
* ``inprocess``: both protocols for N nodes in one process (``InProcessHub``).
* ``redis``: both protocols over Redis >= 6.2 (``RedisBackend.connect``).
* ``embedded``: start/stop a local redis-server (``EmbeddedRedis``).
* ``router``: a node's links split by owner; cross URLs batched per bucket (R URLs
  or T seconds), a sent-URL cache, and the page barrier (a page completes only
  once its cross URLs are stored).
* ``handoff`` (pure): a node's buckets across table changes (ready, awaiting a
  hand-off with held batches, leaving).
* ``membership``: the lease holder's duty: tables for joins, leaves and deaths,
  recovery of a dead node's buckets, the crawl's end (two-wave detection).
* ``definition``: a crawl's settings and seeds, stored once so nodes join by name.
* ``status`` (pure): load balance per interval (Table 1's variance), merged
  summaries, what ``webgather cluster status`` prints.

The running node that composes them is ``webgather.runtime.member.node``.
"""
