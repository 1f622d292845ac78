"""The cluster: partitioning hosts over nodes, cross-URL transport, membership.

Inputs: links whose host a node does not own (from the router), membership
events (join, leave, heartbeat expiry). Outputs: URL batches delivered to the
owning node's seen-test, and a versioned bucket table every node agrees on.
``mapping`` and ``wire`` are pure; ``inprocess`` and ``redis`` are the two
backends of one transport/coordination interface. Called by ``runtime``.
"""
