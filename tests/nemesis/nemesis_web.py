"""The nemesis's synthetic web, in a process of its own so that the harness's work never delays a response
(the request records are the politeness evidence). Run as a script:

    python nemesis_web.py DIR --hosts N --pages P --seed S

Serves the web of :func:`web_params` on loopback, writes ``DIR/resolve.txt`` and ``DIR/seeds.txt``,
prints ``ready``, and on SIGTERM writes every request record to ``DIR/records.jsonl`` (one JSON object
per line, the fields of ``testweb.records.RequestRecord``; times are CLOCK_MONOTONIC, the harness's too).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import signal
from pathlib import Path

from webgather.testweb import TestWebServer, WebModel
from webgather.testweb.params import FaultRates, WebParams
from webgather.testweb.records import RequestRecord

SEED_HOSTS = (0, 3)


def web_params(hosts: int, pages: float, seed: int) -> WebParams:
    """The test web, hosts of equal size, every fixture but those whose one-host tails would make every
    crawl as long as its slowest one: the calendar and deep-path traps, and the connection faults
    (reset, reset while sending headers, truncated body; retried for some 20 s) and very slow pages."""
    rates = dataclasses.replace(FaultRates(), calendar=0.0, deep_path=0.0, reset=0.0, reset_headers=0.0,
                                truncated=0.0, very_slow=0.0)
    return WebParams.for_tests(seed=seed, n_hosts=hosts, mean_pages_per_host=pages, pages_sigma=0.0, faults=rates)


def read_records(path: Path) -> list[RequestRecord]:
    if not path.exists():
        return []
    return [RequestRecord(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


async def _serve(out: Path, params: WebParams) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with TestWebServer(WebModel(params)) as srv:
        srv.write_resolve_file(out / "resolve.txt")
        (out / "seeds.txt").write_text("".join(srv.home_url(h) + "\n" for h in SEED_HOSTS))
        print("ready", flush=True)
        await stop.wait()
        records = list(srv.records)
    with (out / "records.jsonl.part").open("w") as handle:
        handle.writelines(json.dumps(r._asdict()) + "\n" for r in records)
    (out / "records.jsonl.part").rename(out / "records.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--hosts", type=int, required=True)
    parser.add_argument("--pages", type=float, required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(_serve(args.out, web_params(args.hosts, args.pages, args.seed)))


if __name__ == "__main__":
    main()
