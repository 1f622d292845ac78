"""A host's settled robots state as a few bytes, for the node's state on disk. Pure.

The gate keeps at most ``robots.max_hosts`` hosts' rules in memory; the shell
keeps every host's settled state on disk in this form, so that rules evicted from
memory (or held by a crawl that was stopped and resumed) are had again without
asking the host. One byte of kind, then:

* ``A`` - allow all (a 4xx, an empty or unusable robots.txt); nothing follows;
* ``D`` - disallow all; nothing follows;
* ``R`` - rules: the robots.txt text without comments and blank lines (which
  parse to the same rules), zlib-compressed; parsed again for our User-Agent;
* ``X`` - given up on: the crawl-log reason, a NUL, the detail (UTF-8).

A blob that cannot be read (a foreign or damaged row) decodes to None: the
host's robots.txt is then fetched again, never guessed.
"""

from __future__ import annotations

import zlib

from webgather.robots.parse import ALLOW_ALL, DISALLOW_ALL, RobotsRules

__all__ = ["GivenUp", "decode_state", "encode_given_up", "encode_rules"]

GivenUp = tuple[str, str]
"""(reason, detail) of a host the gate gave up on."""


def encode_rules(rules: RobotsRules) -> bytes:
    """The compact form of ``rules`` (see the module docstring)."""
    text = rules.text
    if text is None:
        return b"A" if rules.default else b"D"
    lines = (line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    kept = "\n".join(lines)
    return b"R" + zlib.compress(kept.encode("utf-8"), 6) if kept else b"A"


def encode_given_up(reason: str, detail: str) -> bytes:
    return b"X" + reason.encode("utf-8") + b"\0" + detail.encode("utf-8")


def decode_state(blob: bytes, user_agent: str) -> RobotsRules | GivenUp | None:
    """Rules for ``user_agent``, or (reason, detail) of a host given up on; None if unreadable."""
    kind, rest = blob[:1], blob[1:]
    if kind == b"A" and not rest:
        return ALLOW_ALL
    if kind == b"D" and not rest:
        return DISALLOW_ALL
    try:
        if kind == b"R":
            return RobotsRules.from_text(zlib.decompress(rest).decode("utf-8"), user_agent)
        if kind == b"X" and b"\0" in rest:
            reason, _, detail = rest.decode("utf-8").partition("\0")
            return reason, detail
    except (zlib.error, UnicodeDecodeError):
        return None
    return None
