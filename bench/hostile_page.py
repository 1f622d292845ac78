"""Wall and CPU of a crawl whose site holds issue 13's page (``<div>`` x 500,000, 5.5 MB).

A loopback server (a thread of this process, 127.0.0.1) serves a home page linking
six ordinary pages (each linking a leaf) and the hostile page; ``webgather crawl`` of
each source tree crawls it (``--delay 0``), killed after ``--timeout`` seconds. CPU is
the crawl's and its reaped children's (the parser processes).

    .venv/bin/python bench/hostile_page.py --variant base=/tmp/base/src --variant new=src --timeout 60
    .venv/bin/python bench/hostile_page.py --variant w2=src:--workers,2

A variant is ``NAME=TREE[:EXTRA,ARGS]`` as in bench/node_ab.py.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import threading
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import vs_scrapy as vs  # noqa: E402  (measure(): wall, CPU, RSS of a run in its own session)

DEEP = b"<html><body>" + b"<div>" * 500_000 + b"<a href=/never>x</a>" + b"</div>" * 500_000


def site() -> dict[str, bytes]:
    paths = [f"/p{i}" for i in range(6)]
    pages = {"/": ("<html><body>" + "".join(f'<a href="{p}">{p}</a>' for p in [*paths, "/deep"])).encode()}
    for path in paths:
        pages[path] = f'<html><body><a href="/">home</a><a href="{path}/leaf">leaf</a></body></html>'.encode()
        pages[f"{path}/leaf"] = b"<html><body>leaf</body></html>"
    pages["/deep"] = DEEP
    return pages


async def serve_forever(port_box: list[int], ready: threading.Event) -> None:
    pages = site()

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = pages.get(head.split(b" ", 2)[1].decode())
                status = "200 OK" if body is not None else "404 Not Found"
                body = body if body is not None else b"-"
                writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n"
                             .encode() + body)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(one, "127.0.0.1", 0)
    port_box.append(server.sockets[0].getsockname()[1])
    ready.set()
    await server.serve_forever()


def deep_outcome(out: Path) -> str:
    for log in sorted(out.rglob("crawl.log.jsonl")):  # one per node with --workers
        for line in log.read_text().splitlines():
            if '/deep"' in line:
                return line[:200]
    return "/deep not logged"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", required=True, help="NAME=TREE[:EXTRA,ARGS] (TREE: a src directory)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--work", type=Path, default=BENCH / "results" / "hostile_page")
    args = parser.parse_args()
    port_box: list[int] = []
    ready = threading.Event()
    threading.Thread(target=lambda: asyncio.run(serve_forever(port_box, ready)), daemon=True).start()
    ready.wait(10.0)
    seed = f"http://127.0.0.1:{port_box[0]}/"
    for spec in args.variant:
        name, _, rest = spec.partition("=")
        tree, _, extra = rest.partition(":")
        scratch = (args.work / name).resolve()
        shutil.rmtree(scratch, ignore_errors=True)  # a crawl resumes from its out dir: start afresh
        scratch.mkdir(parents=True)
        code = (f"import sys; sys.path.insert(0, {str(Path(tree).resolve())!r}); "
                "from webgather.cli import main; sys.exit(main())")
        command = [sys.executable, "-c", code, "crawl", seed, "--out", str(scratch / "out"), "--delay", "0",
                   "--no-progress", *[a for a in extra.split(",") if a]]
        wall, cpu, rss, status, _ = vs.measure(command, scratch, args.timeout)
        print(f"{name:<8} wall {wall:6.2f} s  CPU {cpu:6.2f} s  peak RSS {rss:6.1f} MiB  exit {status}", flush=True)
        print(f"         /deep: {deep_outcome(scratch / 'out')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
