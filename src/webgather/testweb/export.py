"""A static copy of a synthetic web, for benchmarking other servers (nginx) fairly.

``export(model, out_dir, port)`` writes, per host, ``<out>/<host>/...``: every
content page (at the web's epoch: version 0), robots.txt and sitemap.xml
when they are 200, and the static fixtures (witnesses, orphans, private and
nofollow-target pages, PDF/PNG/JSON documents); plus ``nginx.conf``, one
``server`` block per host (``listen <address>:<port>``, ``server_name``).

Not exported: what a static server cannot do (redirects, 4xx/5xx fixtures,
flaky, slow, resets, truncation, the bomb, traps, gzip negotiation, changing
versions and death). The URL ``/list?page=N&sort=new`` is stored as
``list/page=N&sort=new`` and mapped back by ``try_files /list/$args``.
"""

from __future__ import annotations

from pathlib import Path

from webgather.errors import ConfigError
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FIXTURE_KINDS
from webgather.testweb.paths import content_path, fixture_path
from webgather.urls import path_of

__all__ = ["export"]

_STATIC = ("private", "orphan", "non_html")


def _file_for(path: str) -> str:
    if path == "/":
        return "index.html"
    bare, mark, query = path.partition("?")
    return bare.lstrip("/") + ("/" + query if mark else "")


def _host_paths(model: WebModel, host: int) -> list[str]:
    paths = [content_path(i) for i in range(int(model.hosts.pages[host]))]
    paths += ["/robots.txt", "/sitemap.xml"]
    hosts = model.hosts
    for kind in _STATIC:
        for k in range(hosts.fixture_count(host, kind)):
            paths.append(fixture_path(kind, k))
            if kind == "private":
                paths.append(f"/private/open/{k}")
    for kind_index, kind in enumerate(FIXTURE_KINDS):
        paths += [f"/w/{kind}/{k}" for k in range(int(hosts.fixtures[host, kind_index]))]
    paths += [f"/nf/{i}" for i in range(int(hosts.pages[host]))]
    return paths


def export(model: WebModel, out_dir: str | Path, port: int) -> tuple[int, Path]:
    """Write the static copy; returns (files written, path of nginx.conf)."""
    root = Path(out_dir).resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"testweb export: cannot create {root}: {exc.strerror}") from exc
    written = 0
    blocks = []
    for host, name in enumerate(model.host_names):
        for path in _host_paths(model, host):
            response = model.page(model.url(host, path, port), model.params.epoch_s)
            if response.status != 200 or response.content_encoding is not None:
                continue
            target = root / name / _file_for(path_of(response.url))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(response.body)
            written += 1
        blocks.append(_server_block(name, model.hosts.addresses[host], port, root / name))
    conf = root / "nginx.conf"
    conf.write_text("".join(blocks), encoding="utf-8")
    return written, conf


def _server_block(name: str, address: str, port: int, docroot: Path) -> str:
    return (
        "server {\n"
        f"    listen {address}:{port};\n"
        f"    server_name {name};\n"
        f"    root {docroot};\n"
        "    default_type text/html;\n"
        "    location = / { try_files /index.html =404; }\n"
        "    location = /list { try_files /list/$args =404; }\n"
        "}\n"
    )
