"""A small site built like a real one, served on loopback by the test: a session cookie that gates
a section, a meta refresh, and (with ``requisites``) stylesheets, images, scripts and fonts, some on
a second host (a CDN). Hosts ``site.test`` and ``cdn.test`` resolve to the server's 127.0.0.1 port."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from types import TracebackType

from aiohttp import web

from webgather.config import CrawlConfig, FetchConfig, PolitenessConfig, RobotsConfig, ScopeConfig

SITE = "site.test"
CDN = "cdn.test"

HOME = """<html><head><title>Home</title>
<link rel=stylesheet href="/css/main.css"><link rel=icon href="/favicon.ico">
<script src="http://cdn.test:{port}/lib.js"></script>
<style>body { background: url("/img/bg.png") }</style></head>
<body><img src="/img/logo.png" srcset="/img/logo-2x.png 2x, /img/logo-3x.png 3x">
<a href="/gated/one.html">one</a> <a href="/old.html">old</a></body></html>"""
GATED = """<html><head><title>Gated {n}</title></head><body><p style="background-image: url('/img/g{n}.png')">in</p>
<a href="/gated/two.html">two</a></body></html>"""
OLD = """<html><head><title>Moved</title><meta http-equiv="refresh" content="0; url=/new.html"></head></html>"""
NEW = "<html><head><title>New</title></head><body>new</body></html>"
MAIN_CSS = """@import url("/css/more.css");
@font-face { font-family: F; src: url(http://cdn.test:{port}/f.woff2) format("woff2"); }
h1 { background: url(../img/h1.png) }"""
MORE_CSS = "p { background: url('/img/p.png') } body { background-color: #c33; color: #fff; font-size: 40px }"


def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour (what a browser draws: the fidelity test sees it)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\0" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = solid_png(200, 120, (20, 60, 200))

REQUISITES = [
    (SITE, "/css/main.css"), (SITE, "/css/more.css"), (SITE, "/favicon.ico"), (CDN, "/lib.js"), (CDN, "/f.woff2"),
    (SITE, "/img/bg.png"), (SITE, "/img/logo.png"), (SITE, "/img/logo-2x.png"), (SITE, "/img/logo-3x.png"),
    (SITE, "/img/h1.png"), (SITE, "/img/p.png"), (SITE, "/img/g1.png"), (SITE, "/img/g2.png"),
]
"""(host, path) of every requisite of the site's pages."""
PAGES = ["/", "/gated/one.html", "/gated/two.html", "/old.html", "/new.html"]


class ArchiveSite:
    """The site above on 127.0.0.1 (``async with``); ``requests`` lists (host, path, Cookie header)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str | None]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> ArchiveSite:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def url(self, path: str = "/", host: str = SITE) -> str:
        return f"http://{host}:{self.port}{path}"

    def config(self, tmp: Path, **fetch: object) -> CrawlConfig:
        tmp.mkdir(parents=True, exist_ok=True)
        resolve = tmp / "resolve.txt"
        resolve.write_text(f"{SITE} 127.0.0.1\n{CDN} 127.0.0.1\n", encoding="ascii")
        return CrawlConfig(
            out_dir=str(tmp / "out"), progress=False,
            fetch=FetchConfig(allow_addresses=("127.0.0.0/8",), resolve_file=str(resolve), max_retries=0, **fetch),  # type: ignore[arg-type]
            politeness=PolitenessConfig(min_delay_s=0.0),
            scope=ScopeConfig(mode="seed-hosts"),
            robots=RobotsConfig(error_retry_s=0.01, retry_factor=1.0, max_tries=1),
        )

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        host = request.host.partition(":")[0]
        path = request.path
        cookie = request.headers.get("Cookie")
        self.requests.append((host, path, cookie))
        if host == CDN:
            return web.Response(body=b"/* cdn */", content_type="text/javascript" if path.endswith(".js") else "font/woff2")
        if path == "/":
            response = web.Response(text=HOME.replace("{port}", str(self.port)), content_type="text/html")
            response.headers.add("Set-Cookie", "session=s3ss10n; Path=/; HttpOnly")
            response.headers.add("Set-Cookie", "tracker=x; Domain=test; Path=/")  # a public suffix: refused
            return response
        if path.startswith("/gated/"):
            if cookie is None or "session=s3ss10n" not in cookie:
                return web.Response(status=403, text="no session")
            n = 1 if path.endswith("one.html") else 2
            return web.Response(text=GATED.format(n=n), content_type="text/html")
        pages = {"/old.html": OLD, "/new.html": NEW}
        if path in pages:
            return web.Response(text=pages[path], content_type="text/html")
        if path.endswith(".css"):
            return web.Response(text=MAIN_CSS.replace("{port}", str(self.port)) if path == "/css/main.css" else MORE_CSS, content_type="text/css")
        if path.endswith((".png", ".ico")):
            return web.Response(body=PNG, content_type="image/png")
        return web.Response(status=404, text="not found")
