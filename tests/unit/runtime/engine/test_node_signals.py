"""NodeSignals: a SIGTERM or SIGINT while a node starts is handed to it when it runs; after its crawl
ended it is absorbed (it used to kill the process with -15 in either gap, a summary half written)."""

from __future__ import annotations

import asyncio
import os
import signal

from webgather.runtime.engine.signals import NodeSignals


async def _deliver(sig: int) -> None:
    os.kill(os.getpid(), sig)
    for _ in range(50):  # the loop runs the handler on its next turn
        await asyncio.sleep(0.001)


def test_a_signal_before_the_node_runs_is_delivered_when_it_starts() -> None:
    calls: list[str] = []

    async def scenario() -> None:
        signals = NodeSignals()
        with signals.installed():
            await _deliver(signal.SIGTERM)  # while the node opens its state
            assert calls == []
            signals.attach(lambda: calls.append("leave"), lambda: calls.append("stop"))
            assert calls == ["leave"]
            await _deliver(signal.SIGINT)  # while it runs: at once
            assert calls == ["leave", "stop"]

    asyncio.run(scenario())


def test_a_signal_after_the_crawl_ended_is_absorbed_while_the_summary_is_written() -> None:
    calls: list[str] = []

    async def scenario() -> None:
        signals = NodeSignals()
        with signals.installed():
            signals.attach(lambda: calls.append("leave"), lambda: calls.append("stop"))
            signals.detach()
            await _deliver(signal.SIGTERM)  # the process lives on: the default action would end it here
        assert calls == []

    asyncio.run(scenario())


def test_the_handlers_from_before_the_run_are_put_back_after_it() -> None:
    """The command line's entry makes SIGTERM an interruption (webgather._entry); the loop's removal of its
    own handler left SIGTERM's default, death by the signal, for the rest of the process."""
    before = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        async def scenario() -> None:
            with NodeSignals().installed():
                assert signal.getsignal(signal.SIGTERM) is not signal.default_int_handler

        asyncio.run(scenario())
        assert signal.getsignal(signal.SIGTERM) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, before)
