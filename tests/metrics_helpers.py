"""Scraping a node's ``--metrics`` endpoint on loopback, for the metrics tests."""

from __future__ import annotations

import asyncio
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

Scrape = dict[str, float]
"""Sample name (with its labels, sorted: ``name{k=v,...}``) -> value."""

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the OS picks it; the test then asks a node to bind it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Can a server listen on the port again (as a restarted node would: SO_REUSEADDR, so the
    TIME_WAIT of connections the server closed does not count)?"""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            probe.listen()
        except OSError:
            return False
    return True


def scrape(port: int, host: str = "127.0.0.1") -> Scrape:
    """GET /metrics and parse it with prometheus_client's own parser."""
    shown = f"[{host}]" if ":" in host else host
    with _NO_PROXY.open(f"http://{shown}:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    values: Scrape = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return values


async def scrape_while(port: int, running: Callable[[], bool], every_s: float = 0.05) -> list[Scrape]:
    """Scrape (from a thread: the node's loop must stay free to take its samples) until ``running()``
    is false; a refused connection (the server is not up yet, or stopped) is skipped."""
    scrapes: list[Scrape] = []
    while running():
        try:
            scrapes.append(await asyncio.to_thread(scrape, port))
        except (urllib.error.URLError, ConnectionError):
            pass
        await asyncio.sleep(every_s)
    return scrapes


def metrics_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("webgather-metrics-")]


def labelled(scrape: Scrape, name: str) -> dict[str, float]:
    """``name{label=value}`` samples of one family as {value of its one label: sample value}."""
    prefix = name + "{"
    return {key[len(prefix):-1].split("=", 1)[1]: v for key, v in scrape.items() if key.startswith(prefix)}
