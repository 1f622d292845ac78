"""The start and stop of a test server on a loopback address, shared by the servers that answer in their own way.

A subclass answers one connection in :meth:`LoopbackServer.handle`. ``async with`` listens on a free
port (``port``) of a loopback address (127.0.0.1 unless told, e.g. ``::1``), with TLS if given a
context; on the way out it stops listening, cancels the connections still
open and waits for them, so a test leaves no task or socket behind. A connection ends quietly when the
client hangs up (or the exit cancels it); its writer is closed whatever happened.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Self


class LoopbackServer:
    """See the module docstring. ``connections``: how many the server accepted."""

    def __init__(self, address: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
        self.address = address
        self.tls = tls
        self.port = 0
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._connection, self.address, 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one connection (the subclass's job)."""
        raise NotImplementedError

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            await self.handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client hung up, or __aexit__ cancelled us: either way this connection is done
        finally:
            self._tasks.discard(task)
            writer.close()
