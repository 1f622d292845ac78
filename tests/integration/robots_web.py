"""A tiny multi-host web on 127.0.0.1 for robots tests: per-host routes, every request logged.

Hosts are names (``h00.test``...) that a resolve file maps to 127.0.0.1, so
nothing is looked up in DNS; the server tells them apart by the Host header.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from webgather.config import CrawlConfig, PolitenessConfig, RobotsConfig
from webgather.store.crawllog import read_crawl_log

from tests.integration.loopback_server import LoopbackServer

Answer = tuple[int, bytes]
"""(status, body) of a route; bodies are served as text/plain unless they start with '<'; a 3xx's body
is sent as its Location instead."""
Routes = Callable[[str, str], Answer]
"""(host without port, path) -> answer."""


@dataclass
class RobotsWeb(LoopbackServer):
    """``async with RobotsWeb(routes) as web``: ``web.url(host, path)``, ``web.requests``."""

    routes: Routes
    delay_s: Callable[[str, str], float] | None = None
    """(host, path) -> seconds to wait before answering (None: answer at once)."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """(host, path) of every request, in arrival order."""
    times: list[float] = field(default_factory=list)
    """time.monotonic() at the arrival of each request (parallel to ``requests``)."""
    most_at_once: int = 0
    """The most requests the server was answering at one time."""
    _answering: int = 0

    def __post_init__(self) -> None:
        super().__init__()

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def paths(self, prefix: str) -> list[tuple[str, str]]:
        return [(h, p) for h, p in self.requests if p.startswith(prefix)]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            raw = await reader.readuntil(b"\r\n\r\n")
            lines = raw.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            host = next(v for k, _, v in (x.partition(": ") for x in lines[1:]) if k.lower() == "host")
            host = host.rsplit(":", 1)[0]
            self.requests.append((host, path))
            self.times.append(time.monotonic())
            self._answering += 1
            self.most_at_once = max(self.most_at_once, self._answering)
            try:
                if self.delay_s is not None:
                    await asyncio.sleep(self.delay_s(host, path))
                status, body = self.routes(host, path)
            finally:
                self._answering -= 1
            kind = "text/html" if body.startswith(b"<") else "text/plain"
            location = ""
            if 300 <= status < 400:  # a redirect's body is its Location
                location, body = f"Location: {body.decode()}\r\n", b""
            writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\n{location}Content-Length: {len(body)}\r\n\r\n"
                         .encode() + body)
            await writer.drain()


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def config_for(tmp: Path, hosts: list[str], robots: RobotsConfig, **fetch: object) -> CrawlConfig:
    resolve = tmp / "resolve.txt"
    resolve.write_text("".join(f"{h} 127.0.0.1\n" for h in hosts))
    base = CrawlConfig()
    return dataclasses.replace(
        base, out_dir=str(tmp / "out"), progress=False, pin_cpu="off", robots=robots,
        politeness=PolitenessConfig(min_delay_s=0.0, backoff_base_s=0.01, backoff_max_s=0.1),
        fetch=dataclasses.replace(base.fetch, resolve_file=str(resolve), total_timeout_s=5.0,
                                  connect_timeout_s=2.0, allow_addresses=("127.0.0.1/32",),  # this web, past the guard
                                  **fetch),  # type: ignore[arg-type]
    )


def log_entries(tmp: Path) -> list[dict[str, object]]:
    return list(read_crawl_log(tmp / "out" / "crawl.log.jsonl"))


def page(*links: str) -> bytes:
    return ("<html><body>" + "".join(f'<a href="{link}">x</a>' for link in links) + "</body></html>").encode()
