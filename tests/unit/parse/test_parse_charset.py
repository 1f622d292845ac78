"""webgather.parse.charset: BOM > header > meta prescan > default, WHATWG labels."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.parse.charset import (
    _LABELS,
    PRESCAN_BYTES,
    decode_html,
    label_to_codec,
    sniff_encoding,
)


def test_every_table_entry_is_a_python_text_codec() -> None:
    assert len(_LABELS) > 200
    for label, codec in _LABELS.items():
        info = codecs.lookup(codec)
        assert info.name == codec, label
        assert "a<é".encode(codec, "replace").decode(codec) in ("a<é", "a<?")


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("UTF-8", "utf-8"),
        (" utf8 ", "utf-8"),
        ("ISO-8859-1", "cp1252"),  # WHATWG: latin1 and ascii are windows-1252
        ("us-ascii", "cp1252"),
        ("latin1", "cp1252"),
        ("iso-8859-9", "cp1254"),
        ("gb2312", "gbk"),
        ("Shift_JIS", "cp932"),
        ("euc-kr", "cp949"),
        ("tis-620", "cp874"),
        ("koi8-r", "koi8-r"),
        ("big5", "big5hkscs"),
        ("utf-16", "utf-16-le"),
        ("x-mac-cyrillic", "mac-cyrillic"),
    ],
)
def test_whatwg_labels(label: str, codec: str) -> None:
    assert label_to_codec(label) == codec


@pytest.mark.parametrize("label", ["utf-7", "base64", "rot13", "iso-2022-kr", "replacement", "x-bogus", ""])
def test_unsupported_or_unsafe_labels_are_unknown(label: str) -> None:
    assert label_to_codec(label) is None


def test_bom_wins_over_header_and_meta() -> None:
    assert sniff_encoding(b"\xef\xbb\xbf<meta charset=koi8-r>", "text/html; charset=latin1") == ("utf-8", 3)
    assert sniff_encoding(b"\xff\xfe<\x00", "text/html; charset=utf-8") == ("utf-16-le", 2)
    assert sniff_encoding(b"\xfe\xff\x00<", None) == ("utf-16-be", 2)
    assert decode_html(b"\xfe\xff\x00h\x00i", None) == ("hi", "utf-16-be")


def test_header_charset_wins_over_meta() -> None:
    body = b"<meta charset=koi8-r>"
    assert sniff_encoding(body, "text/html; charset=ISO-8859-2") == ("iso8859-2", 0)
    assert sniff_encoding(body, 'text/html; charset="windows-1251"') == ("cp1251", 0)
    assert sniff_encoding(body, "text/html;CHARSET='shift_jis'") == ("cp932", 0)
    assert sniff_encoding(body, "text/html; charset=bogus") == ("koi8-r", 0)  # falls through
    assert sniff_encoding(body, "text/html") == ("koi8-r", 0)


def test_meta_forms() -> None:
    assert sniff_encoding(b"<html><head><META CHARSET='Windows-1251'>", None)[0] == "cp1251"
    http_equiv = b'<meta http-equiv="Content-Type" content="text/html; charset=euc-jp">'
    assert sniff_encoding(http_equiv, None)[0] == "euc_jp"
    assert sniff_encoding(b"<meta/charset=gbk>", None)[0] == "gbk"
    assert sniff_encoding(b"<meta name=x content=y><meta charset=bogus><meta charset=l2>", None)[0] == (
        "iso8859-2"
    )


def test_meta_in_comment_or_past_prescan_is_ignored() -> None:
    latin = "café".encode("latin-1")
    assert sniff_encoding(b"<!-- <meta charset=koi8-r> -->" + latin, None)[0] == "cp1252"
    late = b"<p>" + b"x" * PRESCAN_BYTES + b"<meta charset=koi8-r>"
    assert sniff_encoding(late, None)[0] == "utf-8"


def test_meta_utf16_means_utf8() -> None:
    assert sniff_encoding(b"<meta charset=utf-16>", None)[0] == "utf-8"
    assert sniff_encoding(b"<meta charset=UTF-16BE>", None)[0] == "utf-8"


def test_default_utf8_or_cp1252() -> None:
    assert decode_html(b"plain ascii", None) == ("plain ascii", "utf-8")
    assert decode_html("naïve café ünïcode".encode("utf-8"), None)[1] == "utf-8"
    assert decode_html("café crème brûlée".encode("cp1252"), None) == ("café crème brûlée", "cp1252")
    assert decode_html("smart \u201cquotes\u201d".encode("cp1252"), None)[1] == "cp1252"


def test_default_tolerates_a_few_bad_bytes_in_utf8() -> None:
    text = "Ünïcödé " * 20
    body = text.encode("utf-8") + b"\xff" + "ç".encode("utf-8")[:1]  # stray byte + cut char
    decoded, codec = decode_html(body, None)
    assert codec == "utf-8"
    assert decoded.startswith(text) and decoded.endswith("\ufffd\ufffd")


def test_real_replacement_characters_do_not_count_as_errors() -> None:
    assert decode_html("\ufffd\ufffd\ufffd".encode("utf-8"), None)[1] == "utf-8"


def test_decoding_errors_are_replaced_not_raised() -> None:
    text, codec = decode_html(b"\x81\x8d ok", "text/html; charset=windows-1252")
    assert codec == "cp1252" and text.endswith(" ok")
    assert decode_html(b"\xff\xfe\x00", None) == ("\ufffd", "utf-16-le")


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=2000), header=st.none() | st.text(max_size=60))
def test_any_body_and_header_decode(body: bytes, header: str | None) -> None:
    text, codec = decode_html(body, header)
    assert isinstance(text, str)
    assert codecs.lookup(codec).name == codec


@settings(max_examples=100, deadline=None)
@given(label=st.sampled_from(sorted(_LABELS)), body=st.binary(max_size=500))
def test_every_label_decodes_any_bytes(label: str, body: bytes) -> None:
    text, codec = decode_html(b"<" + body, f"text/html; charset={label}")  # "<": no BOM
    assert isinstance(text, str) and codec == _LABELS[label]
