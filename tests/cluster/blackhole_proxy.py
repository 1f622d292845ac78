"""A TCP proxy on loopback that can black-hole its link: connections are still accepted, bytes are
read but nothing is forwarded either way (held, as TCP would retransmit them) until ``heal()``.
Runs on the test's event loop; ``async with BlackHoleProxy(port) as proxy``: ``proxy.url``."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType


class BlackHoleProxy:
    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (host, target_port)
        self.host = host
        self.open = asyncio.Event()
        self.open.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def black_hole(self) -> None:
        self.open.clear()

    def heal(self) -> None:
        self.open.set()

    async def __aenter__(self) -> BlackHoleProxy:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self.open.wait()  # a connection made while black-holed is accepted, then hangs
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except (OSError, asyncio.CancelledError):
            writer.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, up_writer):
                w.close()
            self._tasks.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            await self.open.wait()  # held while black-holed, delivered in order after the heal
            writer.write(data)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        writer.close()
