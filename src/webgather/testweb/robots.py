"""robots.txt and sitemap.xml of each host. Pure.

Robots kinds (:data:`~webgather.testweb.params.ROBOTS_KINDS`):

* ``allow``: ``Disallow:`` (nothing) for everyone.
* ``disallow``: ``/private/`` and ``/a/c/`` disallowed, ``/private/open/`` allowed
  (the longer rule wins, RFC 9309).
* ``agent``: every robot is disallowed everything, except a group for the
  crawler's product token (``params.robots_agent``) that only disallows
  ``/private/`` and ``/list``; a crawler matching the wrong group sees nothing.
* ``delay``: ``Crawl-delay: params.crawl_delay_s`` and ``/private/`` disallowed.
* ``missing``: 404 (allow all). ``error``: 500 or 503, always (the host is
  unavailable to a polite crawler). ``garbage``: 200 with bytes that hold no
  directive under any decoding (allow all).
* ``redirect``: ``/robots.txt`` answers 301 to ``/robots-alt.txt``, which
  disallows ``/private/``.

Hosts with a sitemap add ``Sitemap: http://<host>/sitemap.xml``; the sitemap
lists the home page, every seventh content page (at most 500), the first
20 ``/list`` pages (so ``&amp;`` appears) and the
host's orphans, pages linked from nowhere.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from webgather.testweb.paths import content_path
from webgather.testweb.rand import derive, key64
from webgather.testweb.render import Core
from webgather.testweb.response import Response

__all__ = ["robots_response", "robots_text", "sitemap_response", "sitemap_urls"]

_TEXT = (("Content-Type", "text/plain; charset=utf-8"),)
_XML = (("Content-Type", "application/xml; charset=utf-8"),)
SITEMAP_MAX_PAGES = 500


def robots_text(core: Core, host: int, port_suffix: str) -> str | None:
    """The robots.txt rules of ``host`` as text (None for kinds with no text)."""
    kind = core.hosts.robots[host]
    p = core.params
    if kind == "allow":
        rules = "User-agent: *\nDisallow:\n"
    elif kind == "disallow":
        rules = "User-agent: *\nDisallow: /private/\nAllow: /private/open/\nDisallow: /a/c/\n"
    elif kind == "agent":
        rules = (
            "User-agent: SomeOtherBot\nDisallow: /\n\n"
            f"User-agent: {p.robots_agent}\nDisallow: /private/\nDisallow: /list\n\n"
            "User-agent: *\nDisallow: /\n"
        )
    elif kind in ("delay", "redirect"):
        delay = f"Crawl-delay: {p.crawl_delay_s:g}\n" if kind == "delay" else ""
        rules = f"# {core.hosts.names[host]}\nUser-agent: *\n{delay}Disallow: /private/\n"
    else:
        return None
    if core.hosts.sitemap[host]:
        rules += f"\nSitemap: {core.url(host, '/sitemap.xml', port_suffix)}\n"
    return rules


def robots_response(core: Core, host: int, port_suffix: str, alt: bool) -> Response:
    """``/robots.txt`` (or ``/robots-alt.txt`` when ``alt``) of ``host``."""
    kind = core.hosts.robots[host]
    url = core.url(host, "/robots-alt.txt" if alt else "/robots.txt", port_suffix)
    if alt and kind != "redirect":
        return _missing(url)
    if kind == "redirect" and not alt:
        target = core.url(host, "/robots-alt.txt", port_suffix)
        return Response(url=url, status=301, headers=_TEXT + (("Location", "/robots-alt.txt"),),
                        body=b"moved\n", location=target, fault="robots_redirect")
    if kind == "missing":
        return _missing(url)
    if kind == "error":
        status = 500 if core.hosts.key_list[host] % 2 else 503
        return Response(url=url, status=status, headers=_TEXT, body=b"robots unavailable\n", fault="robots_error")
    if kind == "garbage":
        return Response(url=url, status=200, headers=_TEXT, body=_garbage(core, host), fault="robots_garbage")
    text = robots_text(core, host, port_suffix) or ""
    return Response(url=url, status=200, headers=_TEXT, body=text.encode())


def _missing(url: str) -> Response:
    return Response(url=url, status=404, headers=_TEXT, body=b"not found\n")


def _garbage(core: Core, host: int) -> bytes:
    """Bytes without a single ASCII letter or colon: no directive in any decoding."""
    key = key64("garbage", core.params.seed, host)
    out = bytearray()
    for n in range(400):
        value = derive(key, n)
        byte = 0x80 + value % 0x80
        out.append(byte)
        if value % 37 == 0:
            out.append(0x0A)
        elif value % 41 == 0:
            out.append(0x00)
    return bytes(out)


def sitemap_urls(core: Core, host: int, port_suffix: str) -> tuple[str, ...]:
    """The ``<loc>`` URLs of ``host``'s sitemap (empty when it has none)."""
    if not core.hosts.sitemap[host]:
        return ()
    pages = int(core.hosts.pages[host])
    step = max(7, -(-pages // SITEMAP_MAX_PAGES))
    chosen = sorted(set(range(0, pages, step)) | set(range(3, min(pages, 8 * 20), 8)))
    paths = [content_path(i) for i in chosen]
    paths += [f"/orphan/{k}" for k in range(core.hosts.fixture_count(host, "orphan"))]
    return tuple(core.url(host, path, port_suffix) for path in paths)


def sitemap_response(core: Core, host: int, port_suffix: str) -> Response:
    url = core.url(host, "/sitemap.xml", port_suffix)
    locs = sitemap_urls(core, host, port_suffix)
    if not locs:
        return _missing(url)
    entries = "".join(f"<url><loc>{escape(loc)}</loc></url>\n" for loc in locs)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + entries + "</urlset>\n"
    ).encode()
    return Response(url=url, status=200, headers=_XML, body=body, follow_links=locs)
