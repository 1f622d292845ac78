"""``webgather surt URL...``: each URL's SURT key, the form ``[scope] include_surt`` / ``exclude_surt`` accept.

The key is pywb's (the CDXJ index's, :func:`webgather.surtkey.surt`) of the URL's
canonical form, which is what scope compares prefixes with.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    parser = sub.add_parser("surt", help="print the SURT key of each URL (a prefix for --include-surt/--exclude-surt)")
    parser.add_argument("urls", nargs="+", metavar="URL", help="an http(s) URL")
    parser.set_defaults(func=_surt)


def _surt(args: argparse.Namespace) -> int:
    from webgather.errors import ConfigError
    from webgather.surtkey import surt
    from webgather.urls import canonicalize

    keys = []
    for url in args.urls:
        canonical = canonicalize(url)
        if canonical is None:
            raise ConfigError(f"surt: {url!r} is not an http(s) URL")
        keys.append(surt(canonical))
    print("\n".join(keys))
    return 0
