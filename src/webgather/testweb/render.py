"""Content pages: their properties, links and HTML. Pure.

A content page's properties are drawn from its key (see :mod:`.rand`):
out-degree and targets (:mod:`.links`), change period and phase, death time,
charset mode, gzip, ``<base href>``, a ``rel=nofollow`` link, text size.

Time: a page with change period P and phase f (uniform in [0, P)) has body
version 0 until ``epoch_s + f`` and version k during
``[epoch_s + f + (k-1)P, epoch_s + f + kP)``; ETag and Last-Modified follow
the version. Only the text changes with the version, never the links, so the
closure of a crawl does not depend on when it runs. A dying page answers 404
or 410 from its death time on; it carries no followable links, so its death
does not change the closure either.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from email.utils import formatdate

import numpy as np

from webgather.testweb.hosts import HostTable
from webgather.testweb.hrefs import BaseContext, attr, choose_href, dir_of
from webgather.testweb.links import S_DIE_AT, S_DIE_STATUS, out_degrees, page_keys, targets
from webgather.testweb.params import FIXTURE_KINDS, WebParams
from webgather.testweb.paths import content_path, entry_paths
from webgather.testweb.rand import derive, derive_arr, lognormal_from_unit, pick_from_mix, unit
from webgather.testweb.requisites import page_head, page_image, page_requisites
from webgather.testweb.response import Response
from webgather.testweb.text import Corpus, encode_html, head_charset, header_content_type

__all__ = [
    "ContentInfo", "Core", "content_info", "content_links", "fixture_entries", "render_content", "script_link_indexes",
    "version_window",
]

S_PERIOD, S_PHASE, S_CHARSET = 21, 22, 25
_LINK_STREAMS = (4 << 20, 6 << 20, 5 << 20, 8 << 20)
S_GZIP, S_BASE, S_NOFOLLOW, S_TEXT, S_VERSION = 26, 27, 28, 29, 7 << 20
S_SCRIPT = 30
_ANCHOR_ELEMENT = 8
"""A link whose element draw (mod 100) is at least this is an ``<a href>`` (below: area, iframe, link)."""


@dataclass(frozen=True, eq=False)
class Core:
    """What every page builder needs: params, the host table, the text corpus."""

    params: WebParams
    hosts: HostTable
    corpus: Corpus
    memo: dict[object, bytes] = field(default_factory=dict)
    """Expensive pure results kept once computed (the compression bomb)."""

    def authority(self, host: int, port_suffix: str) -> str:
        return self.hosts.names[host] + port_suffix

    def url(self, host: int, path: str, port_suffix: str) -> str:
        return f"http://{self.hosts.names[host]}{port_suffix}{path}"


@dataclass(frozen=True, slots=True)
class ContentInfo:
    host: int
    index: int
    key: int
    degree: int
    dying: bool
    period_s: float | None
    phase_s: float
    die_at_s: float
    die_status: int
    charset: str
    gzip: bool
    base: int
    """0: no <base>; 1: <base href="/a/b/">; 2: absolute base URL."""
    nofollow: bool
    text_chars: int



def content_info(core: Core, host: int, index: int) -> ContentInfo:
    p = core.params
    local = np.array([index])
    keys = page_keys(core.hosts, np.array([host]), local)
    key = int(keys[0])
    degree = int(out_degrees(keys, local, p)[0])
    period = pick_from_mix(p.change_mix, unit(derive(key, S_PERIOD)))
    base_u = unit(derive(key, S_BASE))
    text_mean = max(300.0, p.mean_page_bytes - 60.0 * p.mean_out_degree - 450.0)
    text = lognormal_from_unit(unit(derive(key, S_TEXT)), text_mean, p.page_bytes_sigma)
    return ContentInfo(
        host=host, index=index, key=key, degree=degree, dying=degree == 0,
        period_s=None if period is None else float(period),
        phase_s=unit(derive(key, S_PHASE)) * (float(period) if period else 0.0),
        die_at_s=p.epoch_s + unit(derive(key, S_DIE_AT)) * p.death_horizon_s,
        die_status=404 if derive(key, S_DIE_STATUS) % 2 else 410,
        charset=str(pick_from_mix(p.charset_mix, unit(derive(key, S_CHARSET)))),
        gzip=unit(derive(key, S_GZIP)) < p.gzip_share,
        base=0 if base_u >= p.base_href_share else 1 + int(base_u * 1e6) % 2,
        nofollow=unit(derive(key, S_NOFOLLOW)) < p.nofollow_share,
        text_chars=int(min(text, 120_000.0)),
    )


def content_links(core: Core, info: ContentInfo, port_suffix: str) -> list[tuple[int, str]]:
    """(target host, target path) of each followable content link, in link order."""
    if info.degree == 0:
        return []
    link = np.arange(info.degree, dtype=np.int64)
    keys = np.full(info.degree, info.key, dtype=np.uint64)
    dst_host, dst_local = targets(core.hosts, core.params, np.full(info.degree, info.host), keys, link)
    return [(int(h), content_path(int(i))) for h, i in zip(dst_host.tolist(), dst_local.tolist())]


def version_window(info: ContentInfo, epoch_s: float, now_s: float) -> tuple[int, float, float, float]:
    """(version, last_modified_s, valid_from_s, valid_until_s) of the body at ``now_s``."""
    if info.period_s is None or now_s < epoch_s + info.phase_s:
        until = math.inf if info.period_s is None else epoch_s + info.phase_s
        return 0, epoch_s, -math.inf, until
    k = math.floor((now_s - epoch_s - info.phase_s) / info.period_s) + 1
    start = epoch_s + info.phase_s + (k - 1) * info.period_s
    return k, start, start, start + info.period_s


def render_content(core: Core, info: ContentInfo, port_suffix: str, now_s: float, body: bool = True) -> Response:
    """The answer of a content page at ``now_s`` (``body=False``: links and validators only)."""
    p = core.params
    authority = core.authority(info.host, port_suffix)
    url = f"http://{authority}{content_path(info.index)}"
    if info.dying and now_s >= info.die_at_s:
        html = f"<!DOCTYPE html><title>Gone</title><p>{url} is gone.</p>" if body else ""
        return Response(url=url, status=info.die_status, headers=(("Content-Type", "text/html; charset=utf-8"),),
                        body=html.encode(), fault="dead", valid_from_s=info.die_at_s, rendered=body)
    links = content_links(core, info, port_suffix)
    follow = tuple(f"http://{core.hosts.names[h]}{port_suffix}{path}" for h, path in links)
    if info.index == 0:
        follow += tuple(f"http://{authority}{path}" for path in fixture_entries(core, info.host))
    version, modified, valid_from, valid_until = version_window(info, p.epoch_s, now_s)
    if info.dying:
        valid_until = min(valid_until, info.die_at_s)
    headers = (
        ("Content-Type", header_content_type(info.charset)),
        ("ETag", f'"{derive(info.key, S_VERSION + version):016x}"'),
        ("Last-Modified", formatdate(modified, usegmt=True)),
    )
    scripted = script_link_indexes(core, info)
    html = _html(core, info, authority, port_suffix, links, version, scripted) if body else ""
    requisites = page_requisites(authority, info.index) if p.requisites else ()
    return Response(
        url=url, status=200, headers=headers, body=encode_html(html, info.charset) if body else b"",
        follow_links=follow, compressible=info.gzip, etag=headers[1][1], last_modified_s=modified,
        valid_from_s=valid_from, valid_until_s=valid_until, rendered=body,
        script_links=tuple(follow[j] for j in sorted(scripted)), requisites=requisites,
    )


def script_link_indexes(core: Core, info: ContentInfo) -> frozenset[int]:
    """Indexes (in link order) of the links an inline script inserts: the ``<a href>`` links of a
    script page (``script_link_share`` of the content pages; none when it is 0, drawing nothing)."""
    share, count = core.params.script_link_share, info.degree
    if share <= 0.0 or count == 0 or unit(derive(info.key, S_SCRIPT)) >= share:
        return frozenset()
    draws = _link_draws(info.key, count)
    return frozenset(j for j in range(count) if draws[4 * j + 2] % 100 >= _ANCHOR_ELEMENT)


def _script_of(urls: list[str]) -> str:
    """An inline script that appends a paragraph of ``<a href>`` to the body, one per URL."""
    data = json.dumps(urls).replace("</", "<\\/")
    return ("<script>(function(){var u=" + data + ",p=document.createElement('p');p.className='links';"
            "for(var i=0;i<u.length;i++){var a=document.createElement('a');a.href=u[i];"
            "a.textContent='more '+i;p.appendChild(a);}document.body.appendChild(p);})();</script>")


def _html(core: Core, info: ContentInfo, authority: str, port_suffix: str,
          links: list[tuple[int, str]], version: int, scripted: frozenset[int] = frozenset()) -> str:
    page_path = content_path(info.index)
    base_dir = "/a/b/" if info.base else dir_of(page_path)
    ctx = BaseContext(authority=authority, page_path=page_path, base_dir=base_dir, has_base=info.base > 0)
    title = f"{core.corpus.words(info.key, 3).title()} - page {info.index} of {core.hosts.names[info.host]}"
    head = ["<!DOCTYPE html>", '<html lang="en"><head>', head_charset(info.charset), f"<title>{title}</title>"]
    if info.base:
        head.append(f'<base href="{"/a/b/" if info.base == 1 else f"http://{authority}/a/b/"}">')
    anchors: list[str] = []
    extras: list[str] = []
    inserted = [f"http://{core.authority(h, port_suffix)}{path}" for j, (h, path) in enumerate(links) if j in scripted]
    draws = _link_draws(info.key, len(links))
    words = core.corpus.word_list
    for j, (host, path) in enumerate(links):
        syntax, decor, element, anchor = draws[4 * j : 4 * j + 4]
        href = choose_href(ctx, core.authority(host, port_suffix), path, syntax, decor, j)
        element %= 100
        if element < 3:
            extras.append(f'<area shape="rect" coords="{j},0,{j + 9},9"{attr("href", href, j)} alt="{j}">')
        elif element < 6:
            extras.append(f'<iframe{attr("src", href, j)} title="embed {j}"></iframe>')
        elif element < 8:
            head.append(f'<link rel="{"next" if j % 2 else "prev"}"{attr("href", href, j)}>')
        elif j not in scripted:
            rel = ' rel="noopener"' if element % 13 == 0 else ""
            text = f"{words[anchor % len(words)]} {words[(anchor >> 24) % len(words)]}"
            anchors.append(f"<a{attr('href', href, j)}{rel}>{text}</a>")
    if core.params.requisites:
        head.append(page_head())
    head.append("</head><body>")
    body = _body(core, info, title, anchors, extras, version)
    if core.params.requisites:
        body.insert(1, page_image(info.index))
    if inserted:
        body.insert(len(body) - 1, _script_of(inserted))  # before </body>: document.body exists when it runs
    return "\n".join(head + body)


def _link_draws(key: int, count: int) -> list[int]:
    """Four draws per link (syntax, decoration, element, anchor text), in one vector call."""
    salts = (np.arange(count, dtype=np.uint64)[:, None] + np.array(_LINK_STREAMS, dtype=np.uint64)).ravel()
    draws: list[int] = derive_arr(np.full(salts.shape[0], key, dtype=np.uint64), salts).tolist()
    return draws


def _body(core: Core, info: ContentInfo, title: str, anchors: list[str], extras: list[str], version: int) -> list[str]:
    count = 3 + info.key % 5
    paragraphs = core.corpus.paragraphs(derive(info.key, S_VERSION + 1000 + version), info.text_chars, count)
    out = [f"<h1>{title}</h1>", f"<p>Revision {version}.</p>"]
    per = -(-len(anchors) // count) if anchors else 0
    for n, text in enumerate(paragraphs):
        out.append(f"<p>{text}</p>")
        chunk = anchors[n * per : (n + 1) * per]
        if chunk:
            out.append('<p class="links">' + " | ".join(chunk) + "</p>")
    if extras:
        areas = [e for e in extras if e.startswith("<area")]
        if areas:
            out.append('<map name="nav">' + "".join(areas) + "</map>")
        out.extend(e for e in extras if not e.startswith("<area"))
    if info.nofollow:
        rel = ("nofollow", "external nofollow", "NoFollow noopener")[info.key % 3]
        out.append(f'<p><a href="/nf/{info.index}" rel="{rel}">sponsored</a></p>')
    if info.index == 0:
        out.extend(_fixture_list(core, info.host))
    out.append("</body></html>")
    return out


def fixture_entries(core: Core, host: int) -> list[str]:
    """Root-relative paths of the fixtures the home page of ``host`` links to."""
    paths: list[str] = []
    for k_kind, kind in enumerate(FIXTURE_KINDS):
        for k in range(int(core.hosts.fixtures[host, k_kind])):
            paths.extend(entry_paths(kind, k))
    return paths


def _fixture_list(core: Core, host: int) -> list[str]:
    items = [f'<li><a href="{path}">{path}</a></li>' for path in fixture_entries(core, host)]
    return ["<h2>Fixtures</h2>", "<ul>", *items, "</ul>"] if items else []
