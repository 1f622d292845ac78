"""What the nemesis's nodes share, and its faults: a Redis (Debian's redis-server, on TCP) and the store.

* :class:`RedisService`: kill -9 and restart from the AOF, restart empty, FLUSHALL.
* :class:`FileStoreService`: a directory on its own tmpfs (mounted here, root only) so that the store
  can fill up (a file that takes every free byte) and turn read-only (remount), then heal.
* :class:`S3StoreService`: moto's S3 server in its own process behind a :class:`LinkProxy` that the
  nemesis closes or black-holes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from nemesis_proxy import LinkProxy
from s3_helpers import S3_ENV

from webgather.cluster.embedded import EmbeddedRedis
from webgather.store.shared import S3Store, SharedStore, open_store

STORE_MIB = 256
"""Size of the file store's tmpfs: far above a toy crawl's needs (its fill fault takes the rest)."""


class RedisService:
    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("the nemesis needs redis-server (apt-get install redis-server)")
        self.server = EmbeddedRedis(directory, tcp=True, executable=binary)

    async def start(self) -> None:
        await asyncio.to_thread(self.server.start)

    @property
    def port(self) -> int:
        assert self.server.port is not None
        return self.server.port

    async def kill(self, *, forget: bool = False) -> None:
        """kill -9; ``forget``: its data gone too (a restart without persistence)."""
        await asyncio.to_thread(self.server.kill)
        if forget:
            for entry in self.server.directory.iterdir():
                if not entry.name.startswith("redis."):  # keep redis.log / redis.err
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()

    async def restart(self) -> None:
        await asyncio.to_thread(self.server.start)

    async def flushall(self) -> None:
        import redis.asyncio as aioredis

        client = aioredis.from_url(self.server.url, socket_timeout=5.0)
        try:
            await client.flushall()
        finally:
            await client.aclose()

    async def stop(self) -> None:
        await asyncio.to_thread(self.server.stop)


class FileStoreService:
    """``file://`` store on a tmpfs of its own (``mount``: needs root); faults ``store_full`` and ``store_ro``.
    Without ``mount`` a plain directory (a schedule with no store fault)."""

    kind = "file"

    def __init__(self, root: Path, *, mount: bool = True) -> None:
        self.root = root
        self.mount = mount
        self.url = root.as_uri()
        self.env: dict[str, str] = {}
        self._filler = root / ".nemesis-filler"
        self.mounted = False

    async def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.mount:
            return
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={STORE_MIB}m", "tmpfs", str(self.root)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"cannot mount a tmpfs for the file store (root needed): {done.stderr.strip()}")
        self.mounted = True

    def reader(self) -> SharedStore:
        return open_store(self.url)

    async def fault(self, kind: str) -> None:
        if kind == "store_full":
            stat = os.statvfs(self.root)
            fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                with contextlib.suppress(OSError):
                    os.posix_fallocate(fd, 0, stat.f_bavail * stat.f_frsize)
                with contextlib.suppress(OSError):  # whatever blocks fallocate left
                    while os.write(fd, b"\0" * 4096):
                        pass
            finally:
                os.close(fd)
        elif kind == "store_ro":
            await _retry_mount(["mount", "-o", "remount,ro", str(self.root)])
        else:
            raise ValueError(f"not a file store fault: {kind}")

    async def heal(self, kind: str) -> None:
        if kind == "store_full":
            self._filler.unlink(missing_ok=True)
        else:
            await _retry_mount(["mount", "-o", "remount,rw", str(self.root)])

    async def stop(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.root)], capture_output=True)
            self.mounted = False


async def _retry_mount(command: list[str]) -> None:
    """A remount read-only fails (EBUSY) while a file is open for writing: retry for up to 5 s."""
    deadline = time.monotonic() + 5.0
    while True:
        done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True)
        if done.returncode == 0 or time.monotonic() > deadline:
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")
            return
        await asyncio.sleep(0.05)


class S3StoreService:
    """``s3://nemesis/<prefix>`` on moto's server (own process) behind a proxy; faults ``store_down``
    (connections refused) and ``store_hang`` (black-holed)."""

    kind = "s3"
    bucket = "nemesis"

    def __init__(self, logs: Path, prefix: str = "crawl") -> None:
        self.logs = logs
        self.url = f"s3://{self.bucket}/{prefix}"
        self.env: dict[str, str] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._proxy: LinkProxy | None = None
        self._direct = ""

    async def start(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        with open(self.logs, "ab") as log:
            self._proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                          stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **S3_ENV})
        self._direct = f"http://127.0.0.1:{port}"
        await asyncio.to_thread(_wait_http, self._direct, 30.0)
        self._proxy = LinkProxy("127.0.0.1", port)
        await self._proxy.start()
        self.env = {**S3_ENV, "AWS_ENDPOINT_URL": f"http://{self._proxy.url_host}"}
        await asyncio.to_thread(self.reader()._client.create_bucket, Bucket=self.bucket)

    def reader(self) -> S3Store:
        """The store as the harness reads it: straight to moto, past the proxy the faults cut."""
        saved = {k: os.environ.get(k) for k in S3_ENV}
        os.environ.update(S3_ENV)
        try:
            return S3Store(self.bucket, self.url.split("/", 3)[3], self.url, endpoint_url=self._direct)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    async def fault(self, kind: str) -> None:
        assert self._proxy is not None
        self._proxy.cut({"store_down": "closed", "store_hang": "blackhole"}[kind])

    async def heal(self, kind: str) -> None:
        assert self._proxy is not None
        self._proxy.heal()

    async def stop(self) -> None:
        if self._proxy is not None:
            await self._proxy.close()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(self._proc.wait, 10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                await asyncio.to_thread(self._proc.wait)


def _wait_http(url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:  # it answered
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto's S3 server at {url} did not answer within {timeout_s} s") from None
            time.sleep(0.1)
