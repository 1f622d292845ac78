"""A Redis password never shows in a process's argv: ``crawl --workers`` over a password-protected Redis.

The parent reads the URL from ``--redis-file``; its workers get it in their environment. While
the crawl runs, this test reads ``/proc/PID/cmdline`` of every process of the tree.
"""

from __future__ import annotations

import socket
from pathlib import Path

from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import children, finish_sampling, start_webgather

from webgather.cluster.embedded import EmbeddedRedis
from webgather.testweb import TestWebServer, WebModel

SECRET = "s3cret-pw-7f1e"


class PasswordRedis(EmbeddedRedis):
    """The embedded Redis on loopback TCP with ``requirepass``."""

    def _args(self) -> list[str]:
        return [*super()._args(), "--requirepass", SECRET]

    def _answers_ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port or 0), timeout=1.0) as sock:
                sock.sendall(f"AUTH {SECRET}\r\nPING\r\n".encode())
                reply = b""
                while b"PONG" not in reply and len(reply) < 256:
                    piece = sock.recv(64)
                    if not piece:
                        break
                    reply += piece
                return b"+PONG" in reply
        except OSError:
            return False


def _argvs(pid: int) -> list[list[str]]:
    found = []
    for each in [pid, *children(pid)]:
        try:
            raw = Path(f"/proc/{each}/cmdline").read_bytes()
        except OSError:
            continue
        argv = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
        try:  # a worker forked from the parent (runtime.launch.forked) has its argv, and its own name
            name = Path(f"/proc/{each}/comm").read_text().strip()
        except OSError:
            name = ""
        found.append([*argv, "--node-id", name[3:]] if name.startswith("wg-") else argv)
    return found


async def test_workers_get_the_redis_password_outside_argv(tmp_path: Path) -> None:
    params = small_web()
    out = tmp_path / "crawl"
    with PasswordRedis(tmp_path / "redis", tcp=True) as redis:
        url_file = tmp_path / "redis.url"
        url_file.write_text(f"redis://:{SECRET}@127.0.0.1:{redis.port}/0\n")
        async with TestWebServer(WebModel(params)) as srv:
            config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"))
            toml = write_toml(config, tmp_path / "crawl.toml")
            proc = await start_webgather("crawl", srv.home_url(0), "--out", str(out), "--config", str(toml),
                                         "--no-progress", "--workers", "2", "--redis-file", str(url_file),
                                         "--crawl", "secret-test")
            seen: list[list[str]] = []
            code, output = await finish_sampling(proc, 90, lambda: seen.extend(_argvs(proc.pid)))
    assert code == 0, output
    workers = {tuple(a) for a in seen if "--node-id" in a}
    assert {a[a.index("--node-id") + 1] for a in workers} == {"w0", "w1"}, seen
    assert not [a for a in seen if any(SECRET in part for part in a)]
    assert SECRET not in output
