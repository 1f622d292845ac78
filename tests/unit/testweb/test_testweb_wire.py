"""Request parsing, response bytes, request records and the latency model (all pure)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from webgather.cli import main
from webgather.testweb import LatencyModel, RequestRecord, WebModel, WebParams, max_in_flight, min_gaps
from webgather.testweb.wire import Rendered, parse_head, plain_response


def test_parse_head_reads_only_what_it_needs() -> None:
    head = b"GET /p/1 HTTP/1.1\r\nHost: H0001.web.test:8080\r\nAccept-Encoding: gzip, br\r\nIf-None-Match: \"x\"\r\nConnection: close"
    request = parse_head(head)
    assert request is not None
    assert (request.method, request.target, request.host) == (b"GET", b"/p/1", b"h0001.web.test:8080")
    assert request.accept_gzip and request.close and request.if_none_match == b'"x"' and not request.has_body
    old = parse_head(b"GET / HTTP/1.0\r\nHost: a")
    assert old is not None and old.close
    assert parse_head(b"GET /\r\nHost: a") is None
    assert parse_head(b"GET / HTTP/1.1\r\nno colon here") is None
    body = parse_head(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5")
    assert body is not None and body.has_body
    assert plain_response(421, "x\n").startswith(b"HTTP/1.1 421 Misdirected Request\r\n")


def test_rendered_bytes_gzip_and_failures() -> None:
    model = WebModel(WebParams.for_tests(seed=2, gzip_share=1.0))
    page = model.page(model.home_url(1))
    rendered = Rendered(page, 0)
    assert rendered.full.endswith(page.body) and f"Content-Length: {len(page.body)}".encode() in rendered.full
    compressed = rendered.payload(True, False)
    head, _, body = compressed.partition(b"\r\n\r\n")
    assert b"Content-Encoding: gzip" in head and gzip.decompress(body) == page.body
    assert rendered.payload(False, True) == rendered.head_only
    flaky = Rendered(model.page(model.url(0, "/flaky/0")), 7)
    assert flaky.failure is not None and flaky.failure.startswith(b"HTTP/1.1 ")
    if flaky.response.fail_status in (429, 503):
        assert b"Retry-After: 7" in flaky.failure


def record(start: float, end: float, host: str, local: str = "127.0.1.1") -> RequestRecord:
    return RequestRecord(start, end, host, "/", "127.0.0.1", local, 1, 200, 10)


def test_politeness_measures() -> None:
    records = [record(0.0, 1.0, "a"), record(1.5, 2.0, "a"), record(0.5, 0.8, "b"), record(0.9, 1.2, "b", "127.0.1.2")]
    assert max_in_flight(records, key=lambda r: r.host) == {"a": 1, "b": 1}
    assert max_in_flight(records, key=lambda r: r.local) == {"127.0.1.1": 2, "127.0.1.2": 1}
    gaps = min_gaps(records, key=lambda r: r.host)
    assert gaps["a"] == 0.5 and abs(gaps["b"] - 0.1) < 1e-9


def test_latency_model_is_a_clustered_metric() -> None:
    model = LatencyModel(seed=3, n_cities=4)
    hosts = [f"h{i:04d}.web.test" for i in range(1, 60)]
    assert model.latency_s("127.0.9.1", hosts[0]) == LatencyModel(seed=3, n_cities=4).latency_s("127.0.9.1", hosts[0])
    same = [model.latency_s(a, b) for a in hosts[:20] for b in hosts[20:40] if model.city(a) == model.city(b)]
    other = [model.latency_s(a, b) for a in hosts[:20] for b in hosts[20:40] if model.city(a) != model.city(b)]
    assert same and other and max(same) < sum(other) / len(other)
    assert all(model.base_s <= x <= model.base_s + model.per_unit_s * 1.5 for x in same + other)


def test_cli_stats_and_export(tmp_path: Path, capsys: object) -> None:
    assert main(["testweb", "stats", "--hosts", "4", "--seed", "2", "--preset", "test", "--pages-per-host", "8", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)  # type: ignore[attr-defined]
    assert facts["hosts"] == 4 and facts["content_pages"] == 32 and facts["closure_size"] > 30
    out = tmp_path / "static"
    assert main(["testweb", "export", str(out), "--hosts", "2", "--pages-per-host", "5", "--port", "8081"]) == 0
    conf = (out / "nginx.conf").read_text(encoding="utf-8")
    assert "server_name h0001.web.test;" in conf and ":8081;" in conf
    index = (out / "h0001.web.test" / "index.html").read_bytes()
    assert b"h0001.web.test" in index
    assert main(["testweb", "stats", "--hosts", "0"]) == 2
