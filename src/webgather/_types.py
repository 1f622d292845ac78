"""Names for the values that flow through webgather. No logic lives here."""

from __future__ import annotations

from typing import NewType

Url = NewType("Url", str)
"""A canonical absolute URL (see :func:`webgather.urls.canonicalize`)."""

HostKey = NewType("HostKey", str)
"""``host`` or ``host:port`` of a canonical URL: the unit of politeness and partitioning."""

NodeId = NewType("NodeId", str)
"""A crawl node's name, unique within a crawl."""

Fingerprint = int
"""64-bit fingerprint of a canonical URL, as an unsigned int (numpy: ``uint64``)."""

Seconds = float
