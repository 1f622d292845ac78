"""Page requisites of the synthetic web (``WebParams.requisites``, off by default). Pure.

With them, every content page links a stylesheet and shows an image, and the stylesheet
imports a second one; each holds a background image::

    page i  --<link rel=stylesheet>-->  /s/site.css  --@import-->  /s/more.css  --url()-->  /s/h.png
            --<img src>------------->  /s/p<i>.png   site.css --url()--> /s/bg.png

so a crawl with requisites fetches, per host, the stylesheets, the two backgrounds and one
image per content page (requisite hops 1 to 3). Each :class:`Response` lists its requisites
(absolute URLs) for :mod:`webgather.testweb.closure`.
"""

from __future__ import annotations

from webgather.testweb.response import Response

__all__ = ["PREFIX", "page_head", "page_image", "page_requisites", "requisite_response"]

PREFIX = "/s/"
_PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 24
_CSS = {
    "site.css": ('@import "more.css";\nbody { background: #fff url(bg.png) no-repeat }\n', ("more.css", "bg.png")),
    "more.css": ('h1 { background-image: url("/s/h.png") }\n/* url(not-this.png) */\n', ("h.png",)),
}


def page_head() -> str:
    return f'<link rel="stylesheet" href="{PREFIX}site.css">'


def page_image(index: int) -> str:
    return f'<p><img src="{PREFIX}p{index}.png" alt=""></p>'


def page_requisites(authority: str, index: int) -> tuple[str, ...]:
    return (f"http://{authority}{PREFIX}site.css", f"http://{authority}{PREFIX}p{index}.png")


def requisite_response(authority: str, path: str) -> Response | None:
    """The answer at ``path`` (under :data:`PREFIX`), or None (not a requisite: a 404)."""
    name = path[len(PREFIX):]
    url = f"http://{authority}{path}"
    if name in _CSS:
        text, found = _CSS[name]
        return Response(url=url, status=200, headers=(("Content-Type", "text/css"),), body=text.encode(),
                        requisites=tuple(f"http://{authority}{PREFIX}{n}" for n in found))
    if name in ("bg.png", "h.png") or (name.startswith("p") and name.endswith(".png") and name[1:-4].isdigit()
                                        and (name[1:-4] == "0" or name[1] != "0")):
        return Response(url=url, status=200, headers=(("Content-Type", "image/png"),), body=_PNG)
    return None
