"""Filler text and character encodings of synthetic pages. Pure.

A model builds one corpus of words (~96 K characters, seeded); a page's text
is a few slices of it at hashed offsets, so text costs no generation per page.
The corpus holds non-ASCII words (all encodable in windows-1252) so that a
page whose bytes are windows-1252 but whose header says UTF-8 is really
invalid UTF-8. Text never contains ``<`` or ``&``, so it needs no escaping.
"""

from __future__ import annotations

import random

from webgather.testweb.rand import derive

__all__ = ["Corpus", "encode_html", "head_charset", "header_content_type"]

_WORDS = (
    "the of and to in is for on that with as by at from web page site crawler link index archive "
    "search query host server client network graph node edge rank score robot fetch queue frontier "
    "policy delay polite host address route table bucket stream batch message cache hit miss entry "
    "record digest header body status error retry timeout redirect target anchor text title "
    "library museum river mountain garden city village harbor market school station bridge road "
    "spring summer autumn winter morning evening yellow green blue silver golden quiet bright "
    "history science music theatre painting poetry letter journal chapter volume report study "
    "national regional local public private open common early later modern ancient simple "
    "café naïve Zürich résumé façade coöperate São Paulo Málaga Köln Ærø jalapeño piñata "
    "“quoted” ‘single’ — – … € £ ½ © ®"
).split()
_CORPUS_CHARS = 96 * 1024


class Corpus:
    """A seeded block of words; pages slice it."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        words: list[str] = []
        size = 0
        while size < _CORPUS_CHARS:
            sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 18)))
            sentence = sentence[0].upper() + sentence[1:] + ". "
            words.append(sentence)
            size += len(sentence)
        self.text = "".join(words)[:_CORPUS_CHARS]
        self.word_list = tuple(w for w in _WORDS if w.isalpha())

    def paragraphs(self, key: int, total_chars: int, count: int) -> list[str]:
        """``count`` slices of about ``total_chars`` characters in all, chosen by ``key``."""
        each = max(40, total_chars // max(1, count))
        each = min(each, len(self.text) // 2)
        out = []
        for n in range(count):
            start = derive(key, 500 + n) % (len(self.text) - each)
            out.append(self.text[start : start + each].strip())
        return out

    def words(self, key: int, count: int) -> str:
        """``count`` words picked by ``key`` (anchor texts, titles)."""
        words = self.word_list
        return " ".join(words[derive(key, 900 + n) % len(words)] for n in range(count))


def head_charset(mode: str) -> str:
    """The ``<meta>`` charset declaration placed first in ``<head>`` for a mode."""
    if mode in ("utf8", "cp1252_mislabeled"):
        return '<meta charset="utf-8">'
    if mode == "meta_only":
        return '<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
    return ""


def header_content_type(mode: str) -> str:
    if mode in ("utf8", "cp1252_mislabeled"):
        return "text/html; charset=utf-8"
    return "text/html"


def encode_html(html: str, mode: str) -> bytes:
    """The body bytes for a charset mode.

    ``utf8``: UTF-8, declared in header and meta. ``cp1252_mislabeled``:
    windows-1252 bytes under a UTF-8 declaration. ``meta_only``: windows-1252,
    declared only by ``<meta http-equiv>``. ``bom``: UTF-8 with a byte-order
    mark and no declaration. ``missing``: UTF-8, declared nowhere.
    """
    if mode in ("cp1252_mislabeled", "meta_only"):
        return html.encode("cp1252", "replace")
    data = html.encode("utf-8")
    return b"\xef\xbb\xbf" + data if mode == "bom" else data
