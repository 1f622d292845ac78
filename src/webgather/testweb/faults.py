"""Fixture pages: faults, redirects, traps, non-HTML documents. Pure.

Each fixture exists on a host iff its number is below that host's count
(:attr:`HostTable.fixtures`); anything else is a plain 404. Fixture bodies
that are HTML link to the fixture's *witness* ``/w/<kind>/<k>``, a page
linked from nowhere else: it is in a crawl's fetched set exactly when the
crawler parsed that body, so a crawler that parses a 404, a truncated body or
a too-large one is caught.

Redirect fixtures keep chains private: the intermediate URLs of a chain, a
long chain and a loop are linked from nowhere (only the first URL is, from
the home page), and a chain ends on its own landing page. So the redirect
count a URL is reached with never depends on discovery order, and the
closure is order-independent.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

from webgather.testweb.paths import END, Target, content_path, deep_segment, fixture_path
from webgather.testweb.rand import derive, key64
from webgather.testweb.render import Core
from webgather.testweb.response import Response

__all__ = ["fixture_response", "simple_html"]

_HTML = (("Content-Type", "text/html; charset=utf-8"),)
_TRANSIENT = {"server_error": 500, "unavailable": 503, "throttled": 429}
_GONE = {"not_found": 404, "gone": 410}
_FLAKY_MODES = (503, 500, 429)
"""Status of a flaky page's failing attempts. Not a reset: aiohttp (>= 3.10) silently
re-sends an idempotent request once when a reused keep-alive connection is reset,
so the number of requests per crawler attempt would depend on connection pooling."""


def simple_html(title: str, links: tuple[str, ...] = (), meta: str = "", filler: str = "") -> bytes:
    """A small HTML page linking ``links`` (absolute URLs)."""
    items = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>{meta}</head>'
        f"<body><h1>{title}</h1><ul>{items}</ul>{filler}</body></html>"
    ).encode()


def fixture_response(core: Core, host: int, target: Target, port_suffix: str) -> Response | None:
    """The answer for a fixture URL, or None if no such fixture exists on ``host``."""
    kind, k = target.kind, target.number
    if kind == "witness":
        if k >= core.hosts.fixture_count(host, target.sub):
            return None
        return replace(_page(core, host, port_suffix, target, f"Witness of {target.sub} {k}", ()), fault="witness")
    if k >= core.hosts.fixture_count(host, kind):
        return None
    key = derive(core.hosts.key_list[host], key64(kind, k) & 0xFFFF_FFFF)
    witness = (core.url(host, f"/w/{kind}/{k}", port_suffix),)
    if kind in ("moved", "found", "chain", "loop", "self_redirect", "long_chain"):
        answer = _redirect(core, host, target, port_suffix, key)
        return None if answer is None else _replace(answer, fault=kind)
    if kind in ("calendar", "deep_path"):
        return _trap(core, host, target, port_suffix)
    if kind == "non_html":
        return _non_html(core.url(host, fixture_path(kind, k), port_suffix), k, witness[0])
    if kind == "bomb":
        return _bomb(core, host, target, port_suffix, witness)
    response = _page(core, host, port_suffix, target, f"{kind} {k}", witness)
    return _shape(core, kind, response, key)


def _page(core: Core, host: int, port_suffix: str, target: Target, title: str,
          links: tuple[str, ...], meta: str = "") -> Response:
    url = core.url(host, _path_of(core, target), port_suffix)
    return Response(url=url, status=200, headers=_HTML, body=simple_html(title, links, meta), follow_links=links)


def _path_of(core: Core, target: Target) -> str:
    kind, k = target.kind, target.number
    if kind == "witness":
        return f"/w/{target.sub}/{k}"
    if kind == "private" and target.step == 1:
        return f"/private/open/{k}"
    return fixture_path(kind, k)


def _shape(core: Core, kind: str, response: Response, key: int) -> Response:
    p = core.params
    retry = (("Retry-After", str(p.retry_after_s)),)
    if kind in _GONE:
        return _replace(response, status=_GONE[kind], fault=kind)
    if kind in _TRANSIENT:
        extra = retry if kind != "server_error" else ()
        return _replace(response, status=_TRANSIENT[kind], headers=_HTML + extra, fault=kind)
    if kind == "flaky":
        mode = _FLAKY_MODES[key % len(_FLAKY_MODES)]
        return _replace(response, fault=kind, fail_attempts=1 + (key >> 8) % 2, fail_status=mode)
    if kind in ("slow", "very_slow"):
        return _replace(response, fault=kind, delay_s=p.slow_s if kind == "slow" else p.very_slow_s)
    if kind in ("reset", "reset_headers"):
        return _replace(response, fault=kind, wire=kind)
    if kind == "truncated":
        filler = "<p>" + core.corpus.text[:8000] + "</p>"
        body = simple_html(f"truncated {key % 1000}", response.follow_links, filler=filler)
        return _replace(response, body=body, fault=kind, wire="truncate")
    if kind == "oversized":
        block = ("<p>" + core.corpus.text[:1020] + "</p>\n").encode()
        head = response.body.replace(b"</body></html>", b"")
        reps = max(1, (p.oversize_bytes - len(head)) // len(block) + 1)
        return _replace(response, body=(head + block * reps)[: p.oversize_bytes], fault=kind)
    if kind == "meta_nofollow":
        meta = '<meta name="robots" content="noindex, nofollow">'
        body = simple_html(f"meta nofollow {key % 1000}", response.follow_links, meta=meta)
        return _replace(response, body=body, follow_links=(), fault=kind)
    return _replace(response, fault=kind)


def _replace(response: Response, **changes: object) -> Response:
    return replace(response, **changes)  # type: ignore[arg-type]


def _redirect(core: Core, host: int, target: Target, port_suffix: str, key: int) -> Response | None:
    p = core.params
    kind, k, step = target.kind, target.number, target.step
    here = core.url(host, _redirect_path(kind, k, step), port_suffix)
    if kind == "moved":
        return _to(here, 301, core.url(host, content_path(key % int(core.hosts.pages[host])), port_suffix), None)
    if kind == "found":
        other = (host + 1 + (key >> 8) % core.hosts.n_hosts) % core.hosts.n_hosts
        if k % 2 == 1 and other != host:
            return _to(here, 302, core.url(other, "/", port_suffix), None)
        page_path = content_path(key % int(core.hosts.pages[host]))
        return _to(here, 302, core.url(host, page_path, port_suffix), page_path)
    if kind == "self_redirect":
        return _to(here, 301, here, None)
    if kind == "loop":
        back = _redirect_path(kind, k, 1 - step)
        return _to(here, 302, core.url(host, back, port_suffix), back)
    hops = 2 + key % (p.max_chain_hops - 1) if kind == "chain" else p.long_chain_hops
    if step == END:
        return _page(core, host, port_suffix, target, f"End of {kind} {k}", ())
    if step >= hops:
        return None
    nxt = _redirect_path(kind, k, step + 1 if step + 1 < hops else END)
    return _to(here, 302 if step % 2 else 301, core.url(host, nxt, port_suffix), nxt if step % 3 == 1 else None)


def _redirect_path(kind: str, k: int, step: int) -> str:
    if kind == "loop":
        return f"/r/loop/{k}/{'a' if step == 0 else 'b'}"
    name = {"chain": "chain", "long_chain": "long"}.get(kind)
    if name is not None:
        return f"/r/{name}/{k}/{'end' if step == END else step}"
    return fixture_path(kind, k)


def _to(url: str, status: int, location: str, relative: str | None) -> Response:
    """A redirect to canonical ``location``, written relative (root path) when given."""
    body = simple_html(f"Moved to {location}", ())
    headers = _HTML + (("Location", relative or location),)
    return Response(url=url, status=status, headers=headers, body=body, location=location, fault="redirect")


def _trap(core: Core, host: int, target: Target, port_suffix: str) -> Response:
    k, level = target.number, target.step
    if target.kind == "calendar":
        path = f"/cal/{k}" + "/next" * level
        links = [path + "/next", "/"] + ([path[: -len("/next")]] if level else [])
    else:
        segments = [deep_segment(core.params.seed, lv, core.params.trap_segment_chars) for lv in range(1, level + 1)]
        path = "/".join([f"/deep/{k}", *segments])
        nxt = deep_segment(core.params.seed, level + 1, core.params.trap_segment_chars)
        links = [f"{path}/{nxt}", "/"]
    urls = tuple(core.url(host, link, port_suffix) for link in links)
    title = f"{target.kind} {k} level {level}"
    return Response(url=core.url(host, path, port_suffix), status=200, headers=_HTML,
                    body=simple_html(title, urls), follow_links=urls, fault=target.kind)


def _non_html(url: str, k: int, witness: str) -> Response:
    kind = k % 3
    if kind == 0:
        text = f"BT /F1 12 Tf 72 712 Td (See {witness}) Tj ET"
        body = (
            "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
            "2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
            "3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >> endobj\n"
            f"4 0 obj << /Length {len(text)} >> stream\n{text}\nendstream endobj\n"
            f"/URI ({witness})\ntrailer << /Root 1 0 R >>\n%%EOF\n"
        ).encode()
        return Response(url=url, status=200, headers=(("Content-Type", "application/pdf"),), body=body, fault="non_html")
    if kind == 1:
        return Response(url=url, status=200, headers=(("Content-Type", "image/png"),), body=_png(witness), fault="non_html")
    body = ('{"id": %d, "next": "%s", "html": "<a href=\\"%s\\">x</a>"}' % (k, witness, witness)).encode()
    return Response(url=url, status=200, headers=(("Content-Type", "application/json"),), body=body, fault="non_html")


def _png(text: str) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return len(data).to_bytes(4, "big") + kind + data + crc.to_bytes(4, "big")

    header = (1).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
    pixels = zlib.compress(b"\x00\x80")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"tEXt", b"Comment\x00" + text.encode())
            + chunk(b"IDAT", pixels) + chunk(b"IEND", b""))


def _bomb(core: Core, host: int, target: Target, port_suffix: str, witness: tuple[str, ...]) -> Response:
    url = core.url(host, fixture_path("bomb", target.number), port_suffix)
    size = core.params.bomb_decoded_bytes
    memo_key = ("bomb", url)
    body = core.memo.get(memo_key)
    head = simple_html("bomb", witness).replace(b"</body></html>", b"")
    if body is None:
        packer = zlib.compressobj(6, zlib.DEFLATED, 31)
        parts = [packer.compress(head)]
        block = b" " * (1 << 20)
        left = size - len(head)
        while left > 0:
            parts.append(packer.compress(block[: min(left, len(block))]))
            left -= len(block)
        parts.append(packer.flush())
        body = b"".join(parts)
        core.memo[memo_key] = body
    headers = _HTML
    return Response(url=url, status=200, headers=headers, body=body, follow_links=witness, fault="bomb",
                    content_encoding="gzip", decoded_bytes=max(size, len(head)))
