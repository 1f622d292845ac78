"""The SharedStore contract, run over both stores: a directory (file://) and S3 (moto's server on loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from s3_helpers import moto_s3
from webgather.errors import ConfigError, StoreError
from webgather.store.shared import FileStore, SharedStore, claim_store, open_store


@pytest.fixture(scope="module")
def s3_env() -> Iterator[dict[str, str]]:
    with moto_s3("wg-contract") as env:
        yield env


@pytest.fixture(params=["file", "s3", "s3-no-prefix"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SharedStore:
    if request.param == "file":
        return open_store((tmp_path / "shared").as_uri())
    env = request.getfixturevalue("s3_env")
    assert env["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    prefix = f"p-{tmp_path.name}" if request.param == "s3" else ""
    store = open_store(f"s3://wg-contract/{prefix}")
    for key in store.list():  # the bucket is shared by the module's tests
        store.delete(key)
    return store


def test_put_get_roundtrip(store: SharedStore) -> None:
    assert store.get_bytes("checkpoints/w1/17") is None
    store.put_bytes("checkpoints/w1/17", b"\x00state\xff")
    assert store.get_bytes("checkpoints/w1/17") == b"\x00state\xff"
    assert store.exists("checkpoints/w1/17")
    assert not store.exists("checkpoints/w1/1")


def test_put_replaces(store: SharedStore) -> None:
    store.put_bytes("a/b", b"old")
    store.put_bytes("a/b", b"new and longer")
    assert store.get_bytes("a/b") == b"new and longer"


def test_put_file_copies_bytes(store: SharedStore, tmp_path: Path) -> None:
    local = tmp_path / "x.warc.gz"
    data = bytes(range(256)) * 5000  # over one copy chunk
    local.write_bytes(data)
    store.put_file(local, "warc/x.warc.gz")
    assert store.get_bytes("warc/x.warc.gz") == data


def test_list_by_prefix_sorted(store: SharedStore) -> None:
    for key in ("warc/b", "warc/a", "cdxj/a.cdxj", "warcs"):
        store.put_bytes(key, key.encode())
    assert store.list("warc/") == ["warc/a", "warc/b"]
    assert store.list("warc") == ["warc/a", "warc/b", "warcs"]
    assert store.list() == ["cdxj/a.cdxj", "warc/a", "warc/b", "warcs"]


def test_delete(store: SharedStore) -> None:
    store.put_bytes("k/1", b"1")
    store.delete("k/1")
    store.delete("k/never")  # absent: nothing
    assert store.get_bytes("k/1") is None and store.list("k/") == []


@pytest.mark.parametrize("key", ["", "/abs", "a/../b", "a//b", "./a", "a/"])
def test_bad_keys_refused(store: SharedStore, key: str) -> None:
    with pytest.raises(StoreError, match="bad shared-store key"):
        store.put_bytes(key, b"x")


@pytest.mark.parametrize("url", ["http://x/y", "file://host/p", "file:relative", "s3://", "s3://b/p?x=1", "/plain"])
def test_bad_urls_are_one_line_config_errors(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        open_store(url)
    assert "\n" not in str(info.value)


def test_file_store_leaves_no_partial_file(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "s")
    with pytest.raises(StoreError, match="cannot read"):
        store.put_file(tmp_path / "missing", "k")
    assert store.list() == [] and [p.name for p in (tmp_path / "s").rglob("*")] == []


def test_s3_store_missing_bucket_is_a_store_error(s3_env: dict[str, str]) -> None:
    from webgather.store.shared import S3Store

    store = S3Store("no-such-bucket", "p")
    with pytest.raises(StoreError, match="no-such-bucket"):
        store.put_bytes("k", b"x")


def test_a_store_belongs_to_one_crawl(store: SharedStore) -> None:
    claim_store(store, 1000.0)
    claim_store(store, 1000.0)  # another node of the same crawl, or a resume
    with pytest.raises(ConfigError, match="holds another crawl's files"):
        claim_store(store, 2000.0)


def test_moto_state_starts_empty_for_each_server() -> None:
    with moto_s3("wg-fresh"):
        open_store("s3://wg-fresh/").put_bytes("k", b"1")
    with moto_s3("wg-fresh"):
        assert open_store("s3://wg-fresh/").list() == []
