"""``[scope]`` include/exclude rules and query-parameter stripping. Pure.

:class:`UrlRules` is built from the settings' values (strings) by
:meth:`UrlRules.of`, which raises :class:`~webgather.errors.ConfigError` naming
the setting of a bad regular expression or SURT prefix (``config.checks`` calls
it when a config is loaded, :class:`~webgather.scope.Scope` when a crawl starts).

* ``exclude`` / ``exclude_surt``: a URL matching any of them is excluded (exclude wins).
* ``include`` / ``include_surt``: when any is given, a URL must match one of them
  (a regex or a SURT prefix: the two lists are one list of alternatives).
* Regexes are Python ``re`` patterns *searched* in the canonical URL; SURT prefixes
  are compared with the URL's SURT key (:func:`webgather.surtkey.surt_prefix`).
* ``strip_query_params``: query arguments whose name matches one of these globs
  (fnmatch's ``*``, ``?``, ``[...]``, case-insensitive) are removed from a canonical
  URL, keeping the others in their order; a query left empty goes with its ``?``.
  :meth:`UrlRules.clean` runs before the fingerprint is taken, so ``?sid=1`` and
  ``?sid=2`` are one URL.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from webgather.errors import ConfigError
from webgather.surtkey import surt, surt_prefix

__all__ = ["UrlRules"]


@dataclass(frozen=True, slots=True)
class UrlRules:
    include: tuple[re.Pattern[str], ...]
    """The include regexes (searched; each compiled alone: inline flags and group numbers stay its own)."""
    exclude: tuple[re.Pattern[str], ...]
    """The exclude regexes (searched)."""
    include_surt: re.Pattern[str] | None
    """Alternatives of the include SURT prefixes (matched at the key's start), or None."""
    exclude_surt: re.Pattern[str] | None
    strip: re.Pattern[str] | None
    """Query argument names to drop (full match, case-insensitive), or None."""
    surt_query: bool = False
    """A SURT prefix reaches into the query: keys need it (its sorting costs ~3 us a URL; without a "?"
    in any prefix, a key cut at its "?" matches the same prefixes)."""

    @classmethod
    def of(cls, include: tuple[str, ...] = (), exclude: tuple[str, ...] = (), include_surt: tuple[str, ...] = (),
           exclude_surt: tuple[str, ...] = (), strip_query_params: tuple[str, ...] = (), *,
           section: str = "scope") -> UrlRules:
        """The compiled rules; :class:`ConfigError` names ``<section>.<setting>`` and the bad entry."""
        strip = None
        if strip_query_params:
            strip = re.compile("|".join(f"(?:{fnmatch.translate(name.lower())})" for name in strip_query_params),
                               re.I | re.S)
        return cls(_regexes(f"{section}.include", include), _regexes(f"{section}.exclude", exclude),
                   _prefixes(f"{section}.include_surt", include_surt), _prefixes(f"{section}.exclude_surt", exclude_surt),
                   strip, any("?" in prefix for prefix in (*include_surt, *exclude_surt)))

    @property
    def filters(self) -> bool:
        """Any include or exclude rule is given."""
        return bool(self.include or self.exclude) or self.include_surt is not None or self.exclude_surt is not None

    def excluded(self, url: str, *, includes: bool = True) -> bool:
        """Canonical ``url`` is excluded by an exclude rule, or matches none of the include rules (those only
        when ``includes``: a page requisite is not held to them, see :meth:`webgather.scope.Scope.reject_requisite`)."""
        key = ""
        if self.include_surt is not None or self.exclude_surt is not None:
            key = surt(url if self.surt_query else url.partition("?")[0])
        if any(pattern.search(url) for pattern in self.exclude):
            return True
        if self.exclude_surt is not None and self.exclude_surt.match(key):
            return True
        if not includes or (not self.include and self.include_surt is None):
            return False
        return not (any(pattern.search(url) for pattern in self.include)
                    or (self.include_surt is not None and self.include_surt.match(key) is not None))

    def clean(self, url: str) -> str:
        """Canonical ``url`` without the query arguments ``strip_query_params`` names (``url`` itself if none)."""
        strip = self.strip
        if strip is None:
            return url
        head, mark, query = url.partition("?")
        if not mark:
            return url
        args = query.split("&")
        kept = [arg for arg in args if not strip.fullmatch(arg.partition("=")[0])]
        if len(kept) == len(args):
            return url
        return head + "?" + "&".join(kept) if kept else head


def _regexes(setting: str, patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(f"{setting}: {pattern!r} is not a valid regular expression ({exc})") from None
    return tuple(compiled)


def _prefixes(setting: str, prefixes: tuple[str, ...]) -> re.Pattern[str] | None:
    alternatives = []
    for prefix in prefixes:
        try:
            alternatives.append(surt_prefix(prefix))
        except ValueError as exc:
            raise ConfigError(f"{setting}: {exc}") from None
    return re.compile("|".join(f"(?:{a})" for a in alternatives)) if alternatives else None
