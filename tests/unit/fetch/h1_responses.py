"""Hypothesis strategies for raw HTTP/1.1 responses, well-formed and not, for :mod:`test_h1_differential`."""

from __future__ import annotations

from hypothesis import strategies as st

TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-!#$%&'*+.^_`|~"

status_lines = st.one_of(
    st.builds(
        lambda version, status, reason: f"{version} {status}{reason}".encode("latin-1"),
        st.sampled_from(["HTTP/1.1", "HTTP/1.0"]),
        st.sampled_from([200, 200, 200, 204, 206, 301, 304, 404, 500, 100, 103, 101, 199, 599, 999]),
        st.sampled_from([" OK", " Not Found", "", " ", " Weird reason \xe9", " a\tb"]),
    ),
    st.sampled_from([b"HTTP/2.0 200 OK", b"HTTP/1.1 20 OK", b"HTTP/1.1 2000 OK", b"HTTP/1.1  200 OK",
                     b"http/1.1 200 OK", b"HTTP/1.1 200\tOK", b"HTTP/1.1 099 Low", b"ICY 200 OK"]),
)

framing = st.sampled_from(["length", "length", "chunked", "chunked", "close", "both", "none"])

content_lengths = st.sampled_from(["{n}", "{n}", " {n} ", "{n}, {n}", "{n},{n}", "+{n}", "-1", "0x{n}",
                                   "{n}{n}", "abc", "", "{m}", "0{n}", "99999999999999999999"])
transfer_encodings = st.sampled_from(["chunked", "chunked", "CHUNKED", "gzip, chunked", "chunked, gzip",
                                      "identity", "chunked, chunked", " chunked ", "chunk", "gzip"])
other_fields = st.one_of(
    st.tuples(st.text(TOKEN_CHARS, min_size=1, max_size=12), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)),
    st.sampled_from([("Connection", "close"), ("Connection", "keep-alive"), ("Connection", "Keep-Alive, x"),
                     ("Connection", "upgrade"), ("Upgrade", "websocket"), ("Content-Type", "text/html"),
                     ("Proxy-Connection", "close"), ("Content-Encoding", "gzip")]),
)
bodies = st.binary(max_size=40)
chunk_extensions = st.sampled_from(["", "", ";a=b", ";a", ' ;x="q;"', "\t;y", ";a=b;c=d", ";"])
trailers = st.sampled_from([[], [], ["X-T: 1"], ["X-T: 1", "Y: 2"], ["Content-Length: 9"]])


@st.composite
def chunked_bodies(draw: st.DrawFn, body: bytes, eol: bytes) -> bytes:
    out = []
    at = 0
    while at < len(body):
        size = draw(st.integers(1, max(1, len(body) - at)))
        piece = body[at : at + size]
        at += size
        digits = draw(st.sampled_from(["%x", "%X", "0%x", "00%x"])) % len(piece)
        ext = draw(chunk_extensions)
        out.append(f"{digits}{ext}".encode("latin-1") + eol + piece + eol)
    last = draw(st.sampled_from(["0", "0", "000", "0;z=1"])).encode()
    trailer = b"".join(t.encode("latin-1") + eol for t in draw(trailers))
    out.append(last + eol + trailer + eol)
    return b"".join(out)


@st.composite
def responses(draw: st.DrawFn) -> bytes:
    """A status line, fields that decide framing (right, wrong, duplicated) and others, then a body."""
    eol = draw(st.sampled_from([b"\r\n"] * 6 + [b"\n"]))
    body = draw(bodies)
    kind = draw(framing)
    fields: list[tuple[str, str]] = draw(st.lists(other_fields, max_size=4))
    if kind in ("length", "both"):
        template = draw(content_lengths)
        value = template.format(n=len(body), m=draw(st.integers(0, 60)))
        fields.insert(draw(st.integers(0, len(fields))), ("Content-Length", value))
        if draw(st.booleans()) and draw(st.booleans()):
            fields.append(("Content-Length", draw(st.sampled_from([value, str(len(body)), "7"]))))
    if kind in ("chunked", "both"):
        fields.insert(draw(st.integers(0, len(fields))), ("Transfer-Encoding", draw(transfer_encodings)))
    names = [draw(st.sampled_from([n, n.lower(), n.upper()])) for n, _ in fields]
    sep = draw(st.sampled_from([": ", ":", ":  ", ": ", " : ", ":\t"]))
    lines = [draw(status_lines)] + [f"{n}{sep}{v}".encode("latin-1") for n, (_, v) in zip(names, fields)]
    head = eol.join(lines) + eol + eol
    payload = draw(chunked_bodies(body, eol)) if kind in ("chunked", "both") else body
    return head + payload + draw(st.sampled_from([b"", b"", b"", b"HTTP/1.1 200 OK\r\n\r\n", b"xx"]))


@st.composite
def mutated(draw: st.DrawFn, raw: bytes) -> bytes:
    """``raw`` with a few bytes replaced, dropped or inserted (none, most of the time)."""
    data = bytearray(raw)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["set", "drop", "insert"]))
        byte = draw(st.sampled_from([0, 9, 10, 13, 32, 44, 48, 58, 59, 127, 255]) | st.integers(0, 255))
        if op == "set":
            data[at] = byte
        elif op == "drop":
            del data[at]
        else:
            data.insert(at, byte)
    return bytes(data)


@st.composite
def split(draw: st.DrawFn, raw: bytes) -> list[bytes]:
    """``raw`` cut at random points (one piece, often)."""
    cuts = sorted(set(draw(st.lists(st.integers(0, len(raw)), max_size=6))))
    edges = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in zip(edges, edges[1:]) if b > a] or [b""]


cases = responses().flatmap(mutated).flatmap(split)
"""Pieces of one response as they might arrive."""
