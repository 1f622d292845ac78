"""How long parse_page takes on a typical page: about 13 KB of HTML with 25 links.

Run: ``.venv/bin/python bench/parse_speed.py [--runs 2000] [--seed 1]``

``--cpu`` times the process's CPU instead of the wall clock. With the C parse core
loaded, parse_page is also timed on the pure-Python path (``[python]`` rows);
``WEBGATHER_NATIVE=0`` runs everything on it.
Prints microseconds per page (best of 7 rounds: the machine is shared, and the
minimum is the least disturbed estimate) for: lexbor's parse alone (the floor),
the charset sniff, joining the page's hrefs with resolve_link, and parse_page
without and with visible text.
The page is generated from a seeded random.Random, so every run parses the
same bytes. Budget: ~25 links per page at 1000 pages/s per core, i.e. a page
must parse in well under 1000 us.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from selectolax.lexbor import LexborHTMLParser

from webgather.parse.charset import sniff_encoding
from webgather.parse import native
from webgather.parse.links import parse_page
from webgather.urls import resolve_link

WORDS = (
    "crawler web page link host frontier politeness robots sitemap anchor text "
    "archive fetch parse queue node bucket graph degree rank"
).split()
PAGE_URL = "https://www.example.com/section/articles/page-17.html"


def make_page(rng: random.Random, n_links: int = 25, target_bytes: int = 13_000) -> bytes:
    """A realistic page: head with meta/links/script/style, nav, paragraphs, links."""

    def words(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    head = (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>{words(6)}</title><meta name=viewport content='width=device-width'>"
        "<meta name=robots content='index, follow'>"
        "<link rel=stylesheet href='/static/site.css'><link rel=icon href='/favicon.ico'>"
        "<link rel=canonical href='/section/articles/page-17.html'>"
        "<script>window.dataLayer=[];function g(){dataLayer.push(arguments)}</script>"
        "<style>body{font:14px sans-serif}.nav a{margin:0 4px}</style></head><body>"
    )
    hrefs = [
        rng.choice(["/section/", "../other/", "https://www.example.com/", "https://cdn.example.org/"])
        + f"item-{rng.randrange(10_000)}.html" + rng.choice(["", "?page=2", "#top"])
        for _ in range(n_links)
    ]
    links = [
        f"<li><a href='{h}'{' rel=nofollow' if i % 7 == 0 else ''} class='l'>{words(3)}</a></li>"
        for i, h in enumerate(hrefs)
    ]
    body = "<div class=nav><ul>" + "".join(links[:10]) + "</ul></div><main>"
    rest = links[10:]
    paragraphs: list[str] = []
    while len(head) + len(body) + sum(len(p) for p in paragraphs + rest) < target_bytes:
        paragraphs.append(f"<p class=para>{words(40)}</p>")
    step = max(1, len(paragraphs) // max(1, len(rest)))
    for i, link in enumerate(rest):
        paragraphs.insert(min(len(paragraphs), (i + 1) * step + i), link)
    html = head + body + "".join(paragraphs) + "</main><footer>(c) example</footer></body></html>"
    return html.encode("utf-8")


def per_call_us(func: Callable[[], object], runs: int, rounds: int = 7,
                clock: Callable[[], float] = time.perf_counter) -> float:
    """Best over ``rounds`` of the mean time of ``runs`` calls, in microseconds."""
    means = []
    for _ in range(rounds):
        start = clock()
        for _ in range(runs):
            func()
        means.append((clock() - start) / runs * 1e6)
    return min(means)


def _on_python_path(func: Callable[[], object]) -> Callable[[], object]:
    def call() -> object:
        native.use_native(False)
        try:
            return func()
        finally:
            native.use_native(True)

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cpu", action="store_true", help="time this process's CPU, not the wall clock "
                        "(steadier on a shared machine)")
    args = parser.parse_args()
    body = make_page(random.Random(args.seed))
    page = parse_page(PAGE_URL, body, "text/html")
    hrefs = [str(n.attributes["href"]) for n in LexborHTMLParser(body).css("a[href]")]
    print(f"link core: {native.status()}")
    print(f"page: {len(body)} bytes, {len(page.links)} links, {len(page.text)} chars of text")
    cases: list[tuple[str, Callable[[], object]]] = [
        ("lexbor parse only", lambda: LexborHTMLParser(body)),
        ("charset sniff", lambda: sniff_encoding(body, "text/html")),
        ("resolve_link x links", lambda: [resolve_link(PAGE_URL, h) for h in hrefs]),
        ("parse_page(want_text=False)", lambda: parse_page(PAGE_URL, body, "text/html", want_text=False)),
        ("parse_page(want_text=True)", lambda: parse_page(PAGE_URL, body, "text/html")),
    ]
    if native.available():  # the same calls on the pure-Python path, in this process
        cases += [(f"{name} [python]", _on_python_path(func)) for name, func in cases[-2:]]
    for name, func in cases:
        us = per_call_us(func, args.runs, clock=time.process_time if args.cpu else time.perf_counter)
        print(f"{name:40s} {us:8.1f} us/page  {1e6 / us:9.0f} pages/s")


if __name__ == "__main__":
    main()
