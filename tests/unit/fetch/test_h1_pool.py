"""h1_conn.Pool's count of busy connections: one being opened counts until it is given back, or
until it fails to open."""

from __future__ import annotations

import asyncio

from webgather.fetch.h1_conn import Connection, Pool, State


class _Transport(asyncio.Transport):
    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 80) if name == "peername" else default

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def test_a_connection_being_opened_is_busy_until_given_back_or_not_opened() -> None:
    pool = Pool(max_idle=4)
    pool.opening()
    pool.opening()
    assert (pool.busy, pool.idle) == (2, 0)
    pool.not_opened()  # its connect failed
    assert pool.busy == 1
    conn = Connection(("http", "h", 80, "127.0.0.1", ""), 1 << 20)
    conn.connection_made(_Transport())
    assert conn.state is State.FRESH
    pool.give_back(conn, 0.0)  # a FRESH connection carries no second request: closed, not kept
    assert (pool.busy, pool.idle) == (0, 0)
