"""The shared store: what must outlive a machine (closed WARC files, their CDXJ, bucket checkpoints).

A cluster crawl started with ``--shared-store URL`` keeps there what a node's
own disk cannot promise to keep (see :mod:`webgather.runtime.durability.checkpoint`).
Two kinds of URL:

* ``file:///path``: a directory (local, or shared by NFS and the like). A put
  writes a temporary file beside the target and renames it into place, so a
  reader sees either the old object or the whole new one, never a part.
* ``s3://bucket/prefix``: any S3-compatible object store, through boto3.
  Why boto3: it is the reference S3 client, maintained by AWS, and every
  S3-compatible server (MinIO, Ceph RGW, Garage, moto) is tested against it;
  its standard configuration (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``~/.aws``) applies on
  each machine, so the URL stays the same on every node. Its calls block:
  the node makes them from a worker thread. A PUT to S3 is atomic (a reader
  sees the old object or the whole new one).

Keys are ``/``-separated relative names (``warc/NAME``, ``checkpoints/NODE/17``). One crawl per
store: ``crawl.json`` names the crawl (its epoch) and another crawl is refused (:func:`claim_store`).
Every failure is a :class:`~webgather.errors.StoreError` with one line of text.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from webgather.errors import ConfigError, StoreError

__all__ = ["CRAWL_KEY", "FileStore", "S3Store", "SharedStore", "check_key", "claim_store", "claimed_epoch",
           "open_store"]

COPY_CHUNK_BYTES = 1 << 20


class SharedStore(Protocol):
    """Put, get and list objects under relative keys (module docstring). Blocking calls."""

    url: str

    def put_file(self, local: Path, key: str) -> None:
        """Copy the local file ``local`` to ``key`` (replacing it)."""

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (replacing it)."""

    def get_bytes(self, key: str) -> bytes | None:
        """The object's bytes, or None if there is none."""

    def list(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix``, sorted."""

    def exists(self, key: str) -> bool:
        """True if ``key`` holds an object."""

    def delete(self, key: str) -> None:
        """Remove ``key`` (nothing if absent)."""


def check_key(key: str) -> str:
    """``key`` if it is a relative ``/``-separated name without ``.``/``..`` parts, else StoreError."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in key or "\0" in key:
        raise StoreError(f"bad shared-store key {key!r}")
    return key


CRAWL_KEY = "crawl.json"


def claimed_epoch(store: SharedStore) -> float | None:
    """The epoch of the crawl that claimed the store (:func:`claim_store`), None if none did. The claim
    outlives the crawl's Redis: it is how a node that never saw the crawl tells a Redis that lost the
    crawl's data from a crawl never started."""
    raw = store.get_bytes(CRAWL_KEY)
    if raw is None:
        return None
    try:
        return float(json.loads(raw)["epoch"])
    except (ValueError, KeyError, TypeError):
        raise StoreError(f"shared store {store.url}: {CRAWL_KEY} is unreadable") from None


def claim_store(store: SharedStore, epoch: float) -> None:
    """Mark the store as the crawl's (its epoch: the same on every node and across resumes), or
    ConfigError if it holds another crawl's files, whose names this crawl's would collide with."""
    found = claimed_epoch(store)
    if found is None:
        store.put_bytes(CRAWL_KEY, json.dumps({"epoch": epoch}).encode())
        return
    if abs(found - epoch) > 1e-3:
        raise ConfigError(f"shared store {store.url} holds another crawl's files (started at epoch {found}): "
                          "give each crawl its own directory or prefix")


def open_store(url: str) -> SharedStore:
    """The store a ``--shared-store`` URL names; ConfigError (one line) for a URL it cannot use."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(f"--shared-store {url!r}: a file URL is file:///absolute/path")
        return FileStore(Path(unquote(parts.path)), url)
    if parts.scheme == "s3":
        if not parts.netloc or parts.query or parts.fragment:
            raise ConfigError(f"--shared-store {url!r}: an S3 URL is s3://bucket/prefix")
        return S3Store(parts.netloc, unquote(parts.path).strip("/"), url)
    raise ConfigError(f"--shared-store {url!r}: use file:///path or s3://bucket/prefix")


class FileStore:
    """A directory as a shared store (atomic rename into place)."""

    def __init__(self, root: Path, url: str = "") -> None:
        self.root = root
        self.url = url or root.as_uri()
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"shared store {self.url}: cannot create {root}: {exc.strerror}") from None

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def put_file(self, local: Path, key: str) -> None:
        try:
            with open(local, "rb") as src:
                self._write(key, lambda out: shutil.copyfileobj(src, out, COPY_CHUNK_BYTES))
        except OSError as exc:
            raise StoreError(f"shared store {self.url}: cannot read {local}: {exc.strerror}") from None

    def put_bytes(self, key: str, data: bytes) -> None:
        self._write(key, lambda out: out.write(data))

    def _write(self, key: str, fill: Any) -> None:
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".put-", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    fill(out)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            raise StoreError(f"shared store {self.url}: cannot write {key}: {exc.strerror}") from None

    def get_bytes(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"shared store {self.url}: cannot read {key}: {exc.strerror}") from None

    def list(self, prefix: str = "") -> list[str]:
        found = []
        for path in self.root.rglob("*"):
            rel = path.relative_to(self.root).as_posix()
            if path.is_file() and rel.startswith(prefix) and not path.name.startswith(".put-"):
                found.append(rel)
        return sorted(found)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise StoreError(f"shared store {self.url}: cannot delete {key}: {exc.strerror}") from None


class S3Store:
    """An S3 bucket (and key prefix) as a shared store, through boto3 (module docstring)."""

    def __init__(self, bucket: str, prefix: str = "", url: str = "", *, endpoint_url: str | None = None) -> None:
        try:
            import boto3
            import botocore.exceptions
        except ImportError:
            raise ConfigError("an s3:// shared store needs boto3: pip install 'webgather[s3]'") from None
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        self.url = url or f"s3://{bucket}/{prefix}"
        self._errors: tuple[type[BaseException], ...] = (botocore.exceptions.BotoCoreError,
                                                          botocore.exceptions.ClientError)
        self._file_errors: tuple[type[BaseException], ...] = (OSError, *self._errors)
        self._client: Any = boto3.session.Session().client("s3", endpoint_url=endpoint_url)

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _fail(self, what: str, exc: BaseException) -> StoreError:
        return StoreError(f"shared store {self.url}: {what}: {exc}".splitlines()[0])

    def put_file(self, local: Path, key: str) -> None:
        try:
            self._client.upload_file(str(local), self.bucket, self._key(key))
        except self._file_errors as exc:
            raise self._fail(f"cannot put {key}", exc) from None

    def put_bytes(self, key: str, data: bytes) -> None:
        try:
            self._client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)
        except self._errors as exc:
            raise self._fail(f"cannot put {key}", exc) from None

    def get_bytes(self, key: str) -> bytes | None:
        try:
            reply = self._client.get_object(Bucket=self.bucket, Key=self._key(key))
            return bytes(reply["Body"].read())
        except self._errors as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                return None
            raise self._fail(f"cannot get {key}", exc) from None

    def list(self, prefix: str = "") -> list[str]:
        keys: list[str] = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                           Prefix=self.prefix + prefix)
            for page in pages:
                keys += [obj["Key"][len(self.prefix):] for obj in page.get("Contents", ())]
        except self._errors as exc:
            raise self._fail(f"cannot list {prefix!r}", exc) from None
        return sorted(keys)

    def exists(self, key: str) -> bool:
        try:
            self._client.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except self._errors as exc:
            if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                return False
            raise self._fail(f"cannot look at {key}", exc) from None

    def delete(self, key: str) -> None:
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self._key(key))
        except self._errors as exc:
            raise self._fail(f"cannot delete {key}", exc) from None


def _code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""
