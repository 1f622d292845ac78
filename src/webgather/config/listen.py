"""``ADDR:PORT`` of a listening socket (``--metrics``), checked without DNS. Pure."""

from __future__ import annotations

import ipaddress

__all__ = ["DEFAULT_LISTEN_HOST", "listen_address"]

DEFAULT_LISTEN_HOST = "127.0.0.1"
"""The host when only a port is given: metrics are not published beyond this machine unless asked."""


def listen_address(text: str) -> tuple[str, int] | None:
    """``(host, port)`` from ``PORT``, ``IPv4:PORT`` or ``[IPv6]:PORT``; None if it is none of them.

    The host must be an IP literal: a name would need DNS, and a typo would bind somewhere unexpected."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = DEFAULT_LISTEN_HOST, text
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if not _is_ip(host, version=6):
            return None
    elif not _is_ip(host, version=4):
        return None
    if not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        return None
    return host, int(port_text)


def _is_ip(text: str, *, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False
