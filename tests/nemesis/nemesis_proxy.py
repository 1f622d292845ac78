"""A TCP proxy on 127.0.0.1 whose link the nemesis cuts: a node's link to Redis, or to the S3 server.

Modes: ``open`` (bytes flow), ``closed`` (every connection reset, new ones reset at once: a peer that
refuses) and ``blackhole`` (connections are accepted but no byte is forwarded either way; after the
heal the bytes held back flow again, as TCP's retransmissions deliver them after a short partition).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

MODES = ("open", "closed", "blackhole")


class LinkProxy:
    """``127.0.0.1:port`` -> ``target``; :meth:`cut` and :meth:`heal` change what passes."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.mode = "open"
        self.port = 0
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    @property
    def url_host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut(self, mode: str) -> None:
        if mode not in MODES[1:]:
            raise ValueError(f"cut mode must be closed or blackhole, not {mode!r}")
        self.mode = mode
        self._flowing.clear()
        if mode == "closed":
            for writer in list(self._writers):
                _reset(writer)

    def heal(self) -> None:
        self.mode = "open"
        self._flowing.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "closed":
            _reset(writer)
            return
        self._writers.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            await self._flowing.wait()
            if self.mode == "closed":
                return
            up_reader, upstream = await asyncio.open_connection(*self.target)
            self._writers.add(upstream)
            pipes = [asyncio.create_task(self._pipe(reader, upstream)), asyncio.create_task(self._pipe(up_reader, writer))]
            self._tasks.update(pipes)
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            for pipe in pipes:
                pipe.cancel()
                self._tasks.discard(pipe)
        except OSError:
            pass
        finally:
            for each in (writer, upstream):
                if each is not None:
                    self._writers.discard(each)
                    each.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                await self._flowing.wait()
                data = await reader.read(65536)
                if not data:
                    return
                await self._flowing.wait()  # read while open, the link cut since: held back until the heal
                if self.mode == "closed" or writer.is_closing():
                    return
                writer.write(data)
                await writer.drain()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            _reset(writer)
        for task in list(self._tasks):
            task.cancel()
        self._flowing.set()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST (SO_LINGER 0), as a refusing peer or a dropped link does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    transport = writer.transport
    if isinstance(transport, asyncio.Transport):
        transport.abort()
    else:
        writer.close()
