"""Which character encoding an HTML body is in, and its text. Pure.

The order is the HTML Standard's (WHATWG "encoding sniffing algorithm"):

1. a byte-order mark (UTF-8, UTF-16LE, UTF-16BE) wins over everything;
2. the ``charset`` parameter of the Content-Type header;
3. ``<meta charset=...>`` or ``<meta http-equiv="content-type" content="...charset=...">``
   in the first :data:`PRESCAN_BYTES` bytes (comments skipped);
4. otherwise a default: UTF-8 if the body *is* UTF-8 (at most one invalid
   sequence per :data:`UTF8_BAD_RATIO` non-ASCII bytes, so a stray byte or a
   character cut at the end of a truncated body does not flip it), else windows-1252 (what browsers assume for legacy Western
   pages; every byte decodes).

A label is looked up in the WHATWG label table (the encodings Python has a codec
for), so ``latin1`` and ``us-ascii`` mean windows-1252 and ``gb2312`` means GBK,
as in browsers. A label the table does not know (or names the "replacement"
encoding, or UTF-7, or a non-text codec like ``base64``) is ignored and the next
rule decides: a page never fails to decode. A ``<meta>`` naming UTF-16 means
UTF-8 (the Standard's rule: the meta was readable as ASCII, so it is not
UTF-16). Decoding uses ``errors="replace"``, so nothing here raises.
"""

from __future__ import annotations

import codecs
import re

__all__ = [
    "PRESCAN_BYTES",
    "UTF8_BAD_RATIO",
    "decode_html",
    "label_to_codec",
    "sniff_encoding",
]

PRESCAN_BYTES = 1024
"""How far into the body ``<meta>`` declarations are looked for (the Standard's limit)."""
UTF8_BAD_RATIO = 10
"""Default rule: UTF-8 while invalid sequences x this <= non-ASCII bytes."""

# WHATWG Encoding Standard label table, keyed by the Python codec that
# implements each encoding. "replacement" labels are absent on purpose.
_TABLE: dict[str, str] = {
    "utf-8": "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8",
    "cp866": "866 cp866 csibm866 ibm866",
    "iso8859-2": "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 "
    "iso_8859-2:1987 l2 latin2",
    "iso8859-3": "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 "
    "iso_8859-3:1988 l3 latin3",
    "iso8859-4": "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 "
    "iso_8859-4:1988 l4 latin4",
    "iso8859-5": "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 "
    "iso_8859-5 iso_8859-5:1988",
    "iso8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 "
    "iso-8859-6 iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 "
    "iso_8859-6:1987",
    "iso8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 "
    "iso8859-7 iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    "iso8859-8": "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 "
    "iso8859-8 iso88598 iso_8859-8 iso_8859-8:1988 visual csiso88598i iso-8859-8-i logical",
    "iso8859-10": "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    "iso8859-13": "iso-8859-13 iso8859-13 iso885913",
    "iso8859-14": "iso-8859-14 iso8859-14 iso885914",
    "iso8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    "iso8859-16": "iso-8859-16",
    "koi8-r": "cskoi8r koi koi8 koi8-r koi8_r",
    "koi8-u": "koi8-ru koi8-u",
    "mac-roman": "csmacintosh mac macintosh x-mac-roman",
    "cp874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "cp1250": "cp1250 windows-1250 x-cp1250",
    "cp1251": "cp1251 windows-1251 x-cp1251",
    "cp1252": "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 "
    "iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 "
    "x-cp1252 x-user-defined",
    "cp1253": "cp1253 windows-1253 x-cp1253",
    "cp1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
    "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254",
    "cp1255": "cp1255 windows-1255 x-cp1255",
    "cp1256": "cp1256 windows-1256 x-cp1256",
    "cp1257": "cp1257 windows-1257 x-cp1257",
    "cp1258": "cp1258 windows-1258 x-cp1258",
    "mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
    "gbk": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    "gb18030": "gb18030",
    "big5hkscs": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "euc_jp": "cseucpkdfmtjapanese euc-jp x-euc-jp",
    "iso2022_jp": "csiso2022jp iso-2022-jp",
    "cp932": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "cp949": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 "
    "ksc5601 ksc_5601 windows-949",
    "utf-16-be": "unicodefffe utf-16be",
    "utf-16-le": "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
}
_LABELS: dict[str, str] = {
    label: codecs.lookup(codec).name for codec, labels in _TABLE.items() for label in labels.split()
}
_UTF16 = frozenset({"utf-16-be", "utf-16-le"})
_HIGH_BYTES = bytes(range(0x80, 0x100))
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.IGNORECASE)
_COMMENT = re.compile(rb"<!--.*?(?:-->|$)", re.DOTALL)
_META = re.compile(rb"<meta[\s/][^>]*", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""charset\s*=\s*["']?\s*([^"'\s;>/]+)""", re.IGNORECASE)


def label_to_codec(label: str) -> str | None:
    """Python codec name for a WHATWG encoding label (case, surrounding space ignored)."""
    return _LABELS.get(label.strip(" \t\n\f\r").lower())


def sniff_encoding(body: bytes, content_type_header: str | None = None) -> tuple[str, int]:
    """``(codec, bom_length)`` for ``body`` by the rules in the module docstring."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return bom_codec, len(bom)
    codec: str | None = None
    if content_type_header:
        match = _HEADER_CHARSET.search(content_type_header)
        codec = label_to_codec(match.group(1)) if match else None
    if codec is None:
        codec = _prescan_meta(body[:PRESCAN_BYTES])
    return (codec if codec is not None else _default_codec(body)), 0


def decode_html(body: bytes, content_type_header: str | None = None) -> tuple[str, str]:
    """``(text, codec used)``; the byte-order mark is not part of the text. Never raises."""
    codec, bom_length = sniff_encoding(body, content_type_header)
    return body[bom_length:].decode(codec, "replace"), codec


def _prescan_meta(head: bytes) -> str | None:
    if b"<!--" in head:
        head = _COMMENT.sub(b"", head)
    for meta in _META.finditer(head):
        found = _META_CHARSET.search(meta.group(0))
        if found is None:
            continue
        codec = label_to_codec(found.group(1).decode("ascii", "replace"))
        if codec is not None:
            return "utf-8" if codec in _UTF16 else codec
    return None


def _default_codec(body: bytes) -> str:
    if body.isascii():
        return "utf-8"
    bad = body.decode("utf-8", "replace").count("\ufffd") - body.count(b"\xef\xbf\xbd")
    if bad <= 0:
        return "utf-8"
    non_ascii = len(body) - len(body.translate(None, _HIGH_BYTES))
    return "utf-8" if bad * UTF8_BAD_RATIO <= non_ascii else "cp1252"

