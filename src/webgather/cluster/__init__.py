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
"""
