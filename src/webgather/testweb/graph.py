"""The synthetic web as a pure function: :class:`WebModel`. Pure.

``WebModel(params).page(url, now_s)`` is the answer at any URL, computed on
demand from ``(params, url)`` (and, for changing and dying pages only, the
time): a web of any size costs no disk and no per-page memory. The port comes
from the URL's authority, so the model stays pure whatever port a server
listens on. :meth:`WebModel.link_graph` gives every content page and link at
once (vectorized; the same draws as :meth:`page`).

What a URL holds is described in :mod:`.paths` (the URL scheme), :mod:`.links`
(degrees: mean out-degree ``mean_out_degree``, in-degree tail exponent
``in_degree_exponent``), :mod:`.render` (content pages, change and death),
:mod:`.faults` (fixtures) and :mod:`.robots` (robots.txt and sitemaps).
"""

from __future__ import annotations

from webgather.errors import ConfigError
from webgather.linkgraph import LinkGraph
from webgather.testweb.faults import fixture_response, simple_html
from webgather.testweb.hosts import HostTable, build_hosts
from webgather.testweb.links import ContentTable, build_link_graph, content_table
from webgather.testweb.params import WebParams
from webgather.testweb.paths import content_index, content_path, parse_path
from webgather.testweb.render import ContentInfo, Core, content_info, fixture_entries, render_content, script_link_indexes
from webgather.testweb.requisites import PREFIX, page_requisites, requisite_response
from webgather.testweb.response import Response
from webgather.testweb.robots import robots_response, sitemap_response
from webgather.testweb.text import Corpus
from webgather.urls import canonicalize, host_key, hostname, path_of

__all__ = ["Response", "WebModel", "WebParams"]

_HTML = (("Content-Type", "text/html; charset=utf-8"),)


class WebModel:
    """A deterministic synthetic web: the page at a URL is a pure function of (params, url)."""

    def __init__(self, params: WebParams) -> None:
        self.params = params
        self.hosts: HostTable = build_hosts(params)
        self.core = Core(params=params, hosts=self.hosts, corpus=Corpus(params.seed))
        self._table: ContentTable | None = None
        self._urls: dict[str, tuple[str, ...]] = {}

    # -- hosts and addresses ---------------------------------------------------------
    @property
    def host_names(self) -> tuple[str, ...]:
        return self.hosts.names

    @property
    def n_pages(self) -> int:
        """Content pages (fixtures not counted)."""
        return int(self.hosts.offsets[-1])

    def host_index(self, host: str) -> int | None:
        """Host id of a host name or ``host:port`` key (case-insensitive), or None."""
        return self.hosts.index.get(host.lower().partition(":")[0])

    def address(self, host: str) -> str:
        index = self.host_index(host)
        if index is None:
            raise ConfigError(f"testweb: {host!r} is not a host of this web")
        return self.hosts.addresses[index]

    def addresses(self) -> tuple[str, ...]:
        """Distinct addresses of the web, in host order."""
        return tuple(dict.fromkeys(self.hosts.addresses))

    def resolve_lines(self) -> list[str]:
        """``"host address"`` per host: the static resolve file of the web."""
        return [f"{name} {addr}" for name, addr in zip(self.hosts.names, self.hosts.addresses)]

    def _suffix(self, port: int | None) -> str:
        port = self.params.port if port is None else port
        return "" if port == 80 else f":{port}"

    def url(self, host: int | str, path: str = "/", port: int | None = None) -> str:
        index = host if isinstance(host, int) else self.host_index(host)
        if index is None or not 0 <= index < self.hosts.n_hosts:
            raise ConfigError(f"testweb: no host {host!r} in this web")
        return f"http://{self.hosts.names[index]}{self._suffix(port)}{path}"

    def home_url(self, host: int | str = 0, port: int | None = None) -> str:
        return self.url(host, "/", port)

    def content_urls(self, port: int | None = None) -> tuple[str, ...]:
        """Canonical URL of every content page, in global page order."""
        suffix = self._suffix(port)
        return tuple(
            f"http://{name}{suffix}{content_path(i)}"
            for name, count in zip(self.hosts.names, self.hosts.pages.tolist())
            for i in range(count)
        )

    def fixture_urls(self, host: int | str = 0, port: int | None = None) -> tuple[str, ...]:
        """Entry URLs of the fixtures linked from a host's home page."""
        index = host if isinstance(host, int) else self.host_index(host)
        if index is None:
            raise ConfigError(f"testweb: no host {host!r} in this web")
        return tuple(self.url(index, path, port) for path in fixture_entries(self.core, index))

    # -- pages -----------------------------------------------------------------------
    def page(self, url: str, now_s: float = 0.0, *, body: bool = True) -> Response:
        """The answer at ``url`` at wall-clock time ``now_s``.

        ``body=False`` answers content pages from the vectorized link table
        without rendering them: status, ``follow_links`` and ``fault`` only (no
        headers, body or validators); what the closure needs. Unknown hosts
        get 421, unknown paths 404, strings that are not http(s) URLs 400.
        """
        canonical = canonicalize(url)
        if canonical is None:
            return Response(url=url, status=400, headers=_HTML, body=simple_html("Bad request"))
        name = hostname(canonical)
        host = self.hosts.index.get(name)
        if host is None:
            return Response(url=canonical, status=421, headers=_HTML, body=simple_html("Misdirected request"))
        suffix = host_key(canonical)[len(name) :]
        path = path_of(canonical)
        if not body:
            index = content_index(path)
            if index is not None and index < int(self.hosts.pages[host]):
                return self._content_truth(canonical, host, index, suffix, now_s)
        answer = self._answer(host, path, suffix, now_s, body)
        return answer or Response(url=canonical, status=404, headers=_HTML, body=simple_html("Not found"))

    def _answer(self, host: int, path: str, suffix: str, now_s: float, body: bool) -> Response | None:
        p = self.params
        if p.requisites and path.startswith(PREFIX):
            return requisite_response(self.hosts.names[host] + suffix, path)
        target = parse_path(path, p.seed, p.trap_segment_chars)
        kind = target.kind
        if kind == "content":
            if target.number >= int(self.hosts.pages[host]):
                return None
            return render_content(self.core, content_info(self.core, host, target.number), suffix, now_s, body)
        if kind in ("robots", "robots_alt"):
            return robots_response(self.core, host, suffix, kind == "robots_alt")
        if kind == "sitemap":
            answer = sitemap_response(self.core, host, suffix)
            return answer if answer.status == 200 else None
        if kind == "nofollow":
            if target.number >= int(self.hosts.pages[host]) or not self.info(host, target.number).nofollow:
                return None
            url = self.core.url(host, f"/nf/{target.number}", suffix)
            return Response(url=url, status=200, headers=_HTML, body=simple_html("Sponsored"), fault="nofollow_target")
        if kind == "unknown":
            return None
        return fixture_response(self.core, host, target, suffix)

    def _content_truth(self, url: str, host: int, index: int, suffix: str, now_s: float) -> Response:
        if self._table is None:
            self._table = content_table(self.hosts, self.params)
        table = self._table
        page = int(self.hosts.offsets[host]) + index
        headers = (("Content-Type", "text/html"),)
        if table.dying[page]:
            dead = now_s >= float(table.die_at_s[page])
            status = int(table.die_status[page]) if dead else 200
            return Response(url=url, status=status, headers=headers, fault="dead" if dead else None, rendered=False)
        urls = self._urls.get(suffix)
        if urls is None:
            urls = self._urls[suffix] = self.content_urls(80 if not suffix else int(suffix[1:]))
        links = tuple(map(urls.__getitem__, table.dst[table.starts[page] : table.starts[page + 1]].tolist()))
        if index == 0:
            links += tuple(f"http://{self.hosts.names[host]}{suffix}{p}" for p in fixture_entries(self.core, host))
        script: tuple[str, ...] = ()
        if self.params.script_link_share > 0.0:  # which links only a script inserts: drawn per page
            script = tuple(links[j] for j in sorted(script_link_indexes(self.core, content_info(self.core, host, index))))
        requisites = page_requisites(self.hosts.names[host] + suffix, index) if self.params.requisites else ()
        return Response(url=url, status=200, headers=headers, follow_links=links, rendered=False, script_links=script,
                        requisites=requisites)

    def info(self, host: int | str, index: int) -> ContentInfo:
        """The drawn properties of content page ``index`` of ``host`` (degree, period, charset...)."""
        h = host if isinstance(host, int) else self.host_index(host)
        if h is None or not 0 <= index < int(self.hosts.pages[h]):
            raise ConfigError(f"testweb: no content page {index} on host {host!r}")
        return content_info(self.core, h, index)

    def robots(self, host: str) -> Response:
        """``/robots.txt`` of ``host`` (a name or ``host:port``; the port defaults to params.port)."""
        return self.page(self._host_url(host, "/robots.txt"))

    def sitemap(self, host: str) -> Response:
        """``/sitemap.xml`` of ``host`` (404 on hosts without one)."""
        return self.page(self._host_url(host, "/sitemap.xml"))

    def _host_url(self, host: str, path: str) -> str:
        name, _, port = host.partition(":")
        if self.host_index(name) is None:
            raise ConfigError(f"testweb: {host!r} is not a host of this web")
        return self.url(name, path, int(port) if port.isdigit() else None)

    # -- the whole graph -------------------------------------------------------------
    def link_graph(self) -> LinkGraph:
        """Content pages and their followable content links, as arrays.

        Fixture pages (faults, redirects, traps, witnesses, orphans) are test
        furniture, not part of the graph; nor are links to them. URLs use
        ``params.port``.
        """
        return build_link_graph(self.hosts, self.params, self.content_urls())
