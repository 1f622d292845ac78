"""What page requisites and cookies cost a page: parse_page with and without requisites, a
stylesheet's scan, and the cookie jar's work per request.

Run: ``.venv/bin/python bench/requisite_cost.py [--runs 300] [--seed 1]``

The page is bench/parse_speed.py's typical one (about 13 KB, 25 links) with a realistic set of
requisites added (2 stylesheets, 3 scripts, 8 images with srcset, an icon, 4 style attributes).
The stylesheet is generated (rules with url() and @font-face) at about 20 KB. Prints
microseconds (best of 7 rounds: the machine is shared, the minimum is the least disturbed).
"""

from __future__ import annotations

import argparse
import random

from webgather.fetch.cookies import CrawlCookies
from webgather.parse.links import parse_page
from webgather.parse.requisites import stylesheet_requisites

from parse_speed import PAGE_URL, make_page, per_call_us


def page_with_requisites(rng: random.Random) -> bytes:
    extra = (
        "<link rel=stylesheet href='/static/theme.css'><script src='/static/app.js'></script>"
        "<script src='https://cdn.example.org/lib.js'></script><script src='/static/x.js' defer></script>"
        + "".join(f"<img src='/img/p{i}.jpg' srcset='/img/p{i}@2x.jpg 2x, /img/p{i}@3x.jpg 3x' alt=x>"
                  for i in range(8))
        + "".join(f"<div style='background:url(/img/bg{i}.png) no-repeat;color:red'>x</div>" for i in range(4))
    )
    return make_page(rng).replace(b"<main>", b"<main>" + extra.encode())


def stylesheet(rng: random.Random, target_bytes: int = 20_000) -> bytes:
    parts = ['@import url("base.css");',
             '@font-face{font-family:F;src:url(/f/a.woff2) format("woff2"),url(/f/a.woff) format("woff")}']
    while sum(len(p) for p in parts) < target_bytes:
        n = rng.randrange(1000)
        parts.append(f".c{n} .d{n}>a:hover{{margin:0 {n % 9}px;color:#{n:03x};"
                     + (f"background:url('../img/s{n}.png') no-repeat 0 0;" if n % 5 == 0 else "")
                     + "font:14px/1.4 sans-serif}")
    return "\n".join(parts).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    body = page_with_requisites(rng)
    css = stylesheet(rng)
    found = parse_page(PAGE_URL, body, "text/html", want_requisites=True).requisites
    rows = [
        ("parse_page, requisites off", lambda: parse_page(PAGE_URL, body, "text/html", want_text=False)),
        ("parse_page, requisites on", lambda: parse_page(PAGE_URL, body, "text/html", want_text=False,
                                                         want_requisites=True)),
        (f"stylesheet scan ({len(css) // 1000} KB)", lambda: stylesheet_requisites(PAGE_URL, css, "text/css")),
    ]
    jar = CrawlCookies()
    jar.store("https://www.example.com/", (("Set-Cookie", "sid=abc123; Path=/; HttpOnly"),
                                           ("Set-Cookie", "pref=dark; Path=/; Max-Age=86400")))
    rows += [
        ("cookie header, a site without cookies", lambda: jar.header("https://other.example.net/a")),
        ("cookie header, a site with 2 cookies", lambda: jar.header("https://www.example.com/a/b")),
        ("cookie store, a response setting none", lambda: jar.store("https://www.example.com/a", (("X", "y"),))),
    ]
    print(f"page {len(body)} bytes, {len(found)} requisites; stylesheet {len(css)} bytes")
    for name, func in rows:
        print(f"{name:42s} {per_call_us(func, args.runs):8.1f} us")


if __name__ == "__main__":
    main()
