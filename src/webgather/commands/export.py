"""``webgather export DIR --wacz FILE``: a crawl packed as one WACZ file (:mod:`webgather.store.wacz`).

ReplayWeb.page opens the file in a browser with no server; ``webgather replay FILE.wacz``
serves it through pywb. DIR is a crawl's ``--out``, or a cluster's directory (``nodes/*``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    parser = sub.add_parser("export", help="pack a crawl's WARCs, index and page list as a WACZ file")
    parser.add_argument("dir", metavar="DIR", help="crawl directory (--out of a crawl; a cluster's DIR holds nodes/*)")
    parser.add_argument("--wacz", required=True, metavar="FILE", help="the WACZ file to write (replaced if it exists)")
    parser.add_argument("--title", default=None, help="the collection's title (default: DIR's name)")
    parser.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from webgather.errors import ConfigError
    from webgather.store.wacz import write_wacz

    crawl_dir = Path(args.dir)
    if not crawl_dir.is_dir():
        raise ConfigError(f"{crawl_dir} is not a directory (give the --out of a crawl)")
    out = Path(args.wacz)
    if out.suffix.lower() != ".wacz":
        raise ConfigError(f"--wacz {out}: the file name should end in .wacz (what replay tools look for)")
    summary = write_wacz(crawl_dir, out, software=f"webgather {_version()}", title=args.title)
    print(f"wrote {summary.path}: {summary.warc_files} WARC file(s), {summary.captures} captures, "
          f"{summary.pages} pages, {summary.bytes} bytes")
    return 0


def _version() -> str:
    try:
        return importlib.metadata.version("webgather")
    except importlib.metadata.PackageNotFoundError:
        return "(unknown version)"
