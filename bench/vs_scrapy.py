"""One node against Scrapy, Crawlee and a lean asyncio loop, on the same static web served by nginx.

Builds a static copy of the synthetic web (``webgather testweb export``),
serves it with an nginx started here (foreground, own config, loopback
addresses only, stopped by its PID), and crawls it from h0001's home page with
these rows (``--only`` picks some; the default is all of them):

* **webgather**: ``webgather crawl`` with everything on: robots.txt obeyed,
  politeness bookkeeping with zero delay (``--delay 0``; Crawl-delay honoured
  up to 0 s, as Scrapy ignores it), WARC gzipped, link log, persistent
  frontier and seen-set; **webgather-w2** the same with ``--workers 2``;
  **webgather-pure** one node on the pure-Python parse path (``WEBGATHER_NATIVE=0``, the
  fallback where the C extensions were not built);
* **scrapy**: a CrawlSpider following every link in the domain, robots.txt
  obeyed (bench/scrapy_crawler.py, under bench/.venv-scrapy, made here);
* **lean**: bench/lean_crawler.py, asyncio + aiohttp + uvloop + selectolax,
  robots.txt obeyed (protego) and one connection per host, as webgather, but
  no archive, log or persistence: the floor for CPU per page;
* **crawlee** / **crawlee-mem**: Crawlee for Python's ParselCrawler, robots.txt
  obeyed, with its default file storage (under the run's scratch directory)
  or memory storage (bench/crawlee_crawler.py, under bench/.venv-crawlee, made
  here). Its default HTTP client (impit) cannot be given the resolve file, so
  it runs on Crawlee's httpx client with a network backend that maps names
  from the file and refuses others: no DNS lookup, as for the other rows.

Every row runs with ``--concurrency`` requests at most and reads host names
from the same resolve file (loopback addresses; never real DNS). Page counts
differ by design: Scrapy also follows rel=nofollow links, Crawlee checks
robots.txt for the ``*`` group only (hosts that disallow ``*`` but allow
``webgather`` are skipped) and follows ``<a>`` links only. What each row does
beyond fetching and parsing (printed after the figures):

    crawler      robots.txt obeyed     | one connection per host           | WARC archive | resumable state          | link graph
    webgather    yes (webgather group) | yes                               | yes (gzip)   | yes (frontier, seen-set) | yes (link log)
    scrapy       yes (webgather group) | no (per-host limit = concurrency) | no           | no (JOBDIR unset)        | no
    lean         yes (webgather group) | yes                               | no           | no                       | no
    crawlee      yes (* group only)    | no (no per-host limit)            | no           | yes (file request queue) | no
    crawlee-mem  yes (* group only)    | no (no per-host limit)            | no           | no (memory storage)      | no
    webgather-w2 yes (webgather group) | yes                               | yes (gzip)   | yes (frontier, seen-set) | yes (link log)

Every run is its own process, in alternating order over ``--rounds``;
measured from outside: pages / wall (process start to exit), CPU ms per page
(the process's user + sys from ``wait4``) and peak RSS (the larger of
``wait4``'s ru_maxrss and the sampled RSS sum of the process tree). Medians,
the ratios of the same run (every row to Scrapy, webgather to every peer) and
the targets are printed; the ``webgather-w2`` row needs ``--workers``
on ``webgather crawl`` (skipped if the option is missing).

    .venv/bin/python bench/vs_scrapy.py --rounds 3

Files go under ``--work`` (default bench/results/vs_scrapy, git-ignored).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV_BIN = Path(sys.executable).parent
SCRAPY_VENV = BENCH / ".venv-scrapy"
CRAWLEE_VENV = BENCH / ".venv-crawlee"
DOMAIN = "web.test"


@dataclass
class Run:
    crawler: str
    pages: int
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    ok: bool
    note: str = ""
    cpu_split: str = ""
    """For a --workers run: each node's CPU, the embedded Redis's and the rest (parent, start-up)."""
    pages_99_s: float | None = None
    """Seconds to 99 % of the pages and to the last one, from webgather's summary (None: a peer's run)."""
    last_page_s: float | None = None

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_s / self.pages if self.pages else float("nan")


@dataclass
class Crawler:
    name: str
    command: Callable[[Path], list[str]]
    """Command line for a run whose scratch directory is the argument."""
    pages: Callable[[Path, str], int]
    """Pages from the run's scratch directory and stdout."""
    timeout_s: float
    runs: list[Run] = field(default_factory=list)


# -- the web and its server -----------------------------------------------------------

def byte_compile(package: Path) -> None:
    """Compile ``package``'s modules to bytecode before measuring, as installing a package does: a
    run whose environment has PYTHONDONTWRITEBYTECODE set would otherwise compile every module it
    imports on every start, once per process (three for ``--workers 2``: the parent and two nodes)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                   stdout=subprocess.DEVNULL)


def webgather_package() -> Path:
    """The webgather tree this venv runs (an editable install: the worktree's ``src/webgather``)."""
    out = subprocess.run([sys.executable, "-c", "import webgather, os; print(os.path.dirname(webgather.__file__))"],
                         check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def free_port() -> int:
    with socket.socket() as sock:  # free on the wildcard address -> free on every loopback one
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


def export_web(work: Path, args: argparse.Namespace, port: int) -> tuple[Path, int]:
    web = work / "web"
    shutil.rmtree(web, ignore_errors=True)
    out = subprocess.run(
        [str(VENV_BIN / "webgather"), "testweb", "export", str(web), "--hosts", str(args.hosts),
         "--seed", str(args.seed), "--pages-per-host", str(args.pages_per_host), "--port", str(port)],
        check=True, capture_output=True, text=True, timeout=600,
    ).stdout
    return web / "nginx.conf", int(out.split()[1])


def write_resolve_file(servers_conf: Path, path: Path) -> int:
    """``host address`` lines from the exported server blocks; returns the address count."""
    text = servers_conf.read_text()
    pairs = re.findall(r"listen ([0-9.]+):\d+;\s*server_name (\S+);", text)
    if not pairs or any(not a.startswith("127.") for a, _ in pairs):
        raise SystemExit("vs_scrapy: the exported config has no loopback server blocks")
    path.write_text("".join(f"{name} {address}\n" for address, name in pairs))
    return len({a for a, _ in pairs})


NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 16384;
pid nginx.pid;
error_log error.log warn;
events {{ worker_connections 8192; }}
http {{
    include /etc/nginx/mime.types;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 120s;
    keepalive_requests 1000000;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    include {servers};
}}
"""


def ensure_nginx(install: bool = False) -> str:
    """nginx's program; installed with apt-get if ``install`` (``--install-peers``), else the bench is skipped
    with one line (every row crawls the web nginx serves)."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found is None and not install:
        print(f"{Path(sys.argv[0]).stem}: skipped: nginx is not installed (apt-get install nginx-light; "
              "vs_scrapy.py --install-peers does it)", flush=True)
        raise SystemExit(0)
    if found is None:
        print("vs_scrapy: installing nginx (apt-get)", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-q", "nginx-light"], check=True, env=env, timeout=600,
                       stdout=subprocess.DEVNULL)
        found = shutil.which("nginx") or "/usr/sbin/nginx"
    return found


@contextmanager
def nginx(servers_conf: Path, prefix: Path, port: int, probe: str) -> Iterator[int]:
    """Run nginx in the foreground (a child of this process) until the block ends."""
    (prefix / "tmp").mkdir(parents=True, exist_ok=True)
    conf = prefix / "nginx.conf"
    conf.write_text(NGINX_CONF.format(servers=servers_conf))
    proc = subprocess.Popen([ensure_nginx(), "-p", str(prefix) + "/", "-c", str(conf), "-e", str(prefix / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(probe, port, proc, prefix)
        yield proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_listening(address: str, port: int, proc: subprocess.Popen[bytes], prefix: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"vs_scrapy: nginx exited: {(prefix / 'error.log').read_text()[-2000:]}")
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("vs_scrapy: nginx did not start listening in 15 s")


# -- the peers' own venvs -------------------------------------------------------------

def ensure_venv(venv: Path, spec: str, modules: str, install: bool) -> Path | None:
    """``venv``'s Python, the venv made and ``spec`` pip-installed first unless ``modules`` import there;
    without ``install`` (``--install-peers``) nothing is installed and a venv without them is None."""
    python = venv / "bin" / "python"
    if not install:
        usable = python.exists() and subprocess.run([str(python), "-c", f"import {modules}"],
                                                     capture_output=True).returncode == 0
        return python if usable else None
    if not python.exists():
        print(f"vs_scrapy: creating {venv} and installing {spec} from PyPI", flush=True)
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
    probe = subprocess.run([str(python), "-c", f"import {modules}"], capture_output=True, text=True)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", spec], check=True, timeout=900)
    return python


def ensure_scrapy(spec: str, install: bool) -> Path | None:
    return ensure_venv(SCRAPY_VENV, spec, "scrapy", install)


def ensure_crawlee(spec: str, install: bool) -> Path | None:
    return ensure_venv(CRAWLEE_VENV, spec, "crawlee, parsel, httpx2", install)


def skipped(row: str, venv: Path, spec: str) -> str:
    line = (f"vs_scrapy: {row} skipped: {venv.relative_to(BENCH.parent)} has no {spec} "
            "(--install-peers makes it from PyPI)")
    print(line, flush=True)
    return line


def version_of(python: Path, module: str) -> str:
    out = subprocess.run([str(python), "-c", f"import {module}; print({module}.__version__)"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "?"


# -- measuring one run --------------------------------------------------------------

def tree_rss_kib(pid: int) -> int:
    """RSS of ``pid`` and its descendants, in KiB (0 if gone)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def measure(command: list[str], scratch: Path, timeout_s: float) -> tuple[float, float, float, int, str]:
    """(wall s, cpu s, peak RSS MiB, exit status, stdout) of one run in its own session.

    A run still going after ``timeout_s`` is killed (its whole session) and
    gets exit status -9."""
    out_path, err_path = scratch / "stdout.txt", scratch / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                cwd=scratch, start_new_session=True)
        peak_kib, deadline = 0, started + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                wall = time.perf_counter() - started
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the run's own session: only what it started
            peak_kib = max(peak_kib, tree_rss_kib(proc.pid))
            time.sleep(0.05)
    peak_mib = max(peak_kib, usage.ru_maxrss) / 1024
    return wall, usage.ru_utime + usage.ru_stime, peak_mib, proc.returncode, out_path.read_text()


def run_once(crawler: Crawler, scratch: Path) -> Run:
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    wall, cpu, rss, code, stdout = measure(crawler.command(scratch), scratch, crawler.timeout_s)
    try:
        pages = crawler.pages(scratch, stdout)
    except (OSError, ValueError, KeyError, IndexError) as exc:
        pages, code = 0, code or 1
        stdout += f"\n(no page count: {exc})"
    if code == -9:
        note = f"killed after {crawler.timeout_s:g} s"
    else:
        note = "" if code == 0 else f"exit {code}: {(scratch / 'stderr.txt').read_text()[-300:]!r}"
    return Run(crawler.name, pages, wall, cpu, rss, code == 0, note, cpu_split(scratch / "out", cpu),
               *page_times(scratch / "out"))


def page_times(out: Path) -> tuple[float | None, float | None]:
    """webgather's time to 99 % of pages and to its last page (its summary.json); (None, None) elsewhere."""
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return None, None
    return summary.get("pages_99_s"), summary.get("last_page_s")


def cpu_split(out: Path, total_cpu_s: float) -> str:
    """Where a ``--workers`` run's CPU went, from its merged and per-node summaries ("" for one node)."""
    try:
        merged = json.loads((out / "summary.json").read_text())
        if "workers" not in merged:
            return ""
        nodes = {p.parent.name: float(json.loads(p.read_text())["cpu_s"]) for p in out.glob("nodes/*/summary.json")}
    except (OSError, ValueError, KeyError):
        return ""
    redis_s = merged.get("redis_cpu_s")  # absent from trees before it was recorded, null with --redis URL
    parts = [f"{name} {cpu_s:.1f}" for name, cpu_s in sorted(nodes.items())]
    rest = total_cpu_s - sum(nodes.values()) - float(redis_s or 0.0)
    return (f"CPU s: {', '.join(parts)}, redis {'?' if redis_s is None else format(redis_s, '.1f')}, "
            f"rest (parent, start-up{'' if redis_s is not None else ', redis'}) {rest:.1f}")


# -- the three crawlers ------------------------------------------------------------------

def logged_pages(out: Path) -> int:
    """Final page/sitemap fetches in the crawl logs under ``out`` (a run killed before its summary)."""
    count = 0
    for log in out.glob("**/crawl.log.jsonl"):
        for line in log.read_text().splitlines():
            entry = json.loads(line) if line.startswith("{") and line.endswith("}") else {}
            count += "elapsed_s" in entry and entry.get("kind") != "robots" and not entry.get("retry")
    return count


def webgather_crawler(name: str, seed: str, resolve: Path, args: argparse.Namespace, workers: int | None,
                      native: bool = True) -> Crawler:
    """``native=False``: the pure-Python parse path (``WEBGATHER_NATIVE=0``), the fallback of a
    machine without a compiler; ``env`` execs the crawler, so wait4 still measures it alone."""
    config = args.work / "webgather.toml"
    config.write_text("[politeness]\nmax_crawl_delay_s = 0.0\n")

    def command(scratch: Path) -> list[str]:
        prefix = [] if native else ["env", "WEBGATHER_NATIVE=0"]
        cmd = prefix + [str(VENV_BIN / "webgather"), "crawl", seed, "--out", str(scratch / "out"), "--resolve", str(resolve),
               "--delay", "0", "--concurrency", str(args.concurrency), "--scope", "domains", "--domain", DOMAIN,
               "--config", str(config), "--no-progress", "--allow-address", "127.0.0.0/8"]
        return cmd + (["--workers", str(workers)] if workers else [])

    def pages(scratch: Path, _stdout: str) -> int:
        top = scratch / "out" / "summary.json"
        if top.exists():
            return int(json.loads(top.read_text())["pages"])
        summaries = list((scratch / "out").glob("nodes/*/summary.json"))
        if summaries:
            return sum(int(json.loads(p.read_text())["pages"]) for p in summaries)
        return logged_pages(scratch / "out")

    return Crawler(name, command, pages, args.workers_timeout if workers else args.timeout)


def scrapy_crawler(python: Path, seed: str, resolve: Path, args: argparse.Namespace) -> Crawler:
    def command(scratch: Path) -> list[str]:
        return [str(python), str(BENCH / "scrapy_crawler.py"), seed, "--domain", DOMAIN, "--resolve", str(resolve),
                "--stats", str(scratch / "stats.json"), "--concurrency", str(args.concurrency)]

    def pages(scratch: Path, _stdout: str) -> int:
        return int(json.loads((scratch / "stats.json").read_text())["pages"])

    return Crawler("scrapy", command, pages, args.timeout)


def lean_crawler(seed: str, resolve: Path, args: argparse.Namespace) -> Crawler:
    def command(_scratch: Path) -> list[str]:
        return [sys.executable, str(BENCH / "lean_crawler.py"), seed, "--domain", DOMAIN,
                "--resolve", str(resolve), "--concurrency", str(args.concurrency)]

    def pages(_scratch: Path, stdout: str) -> int:
        return int(json.loads(stdout.strip().splitlines()[-1])["pages"])

    return Crawler("lean", command, pages, args.timeout)


def crawlee_crawler(name: str, python: Path, seed: str, resolve: Path, args: argparse.Namespace,
                    storage: str) -> Crawler:
    """Crawlee's ParselCrawler with its ``file`` (default) or ``memory`` storage; files under the run's scratch."""
    def command(scratch: Path) -> list[str]:
        return [str(python), str(BENCH / "crawlee_crawler.py"), seed, "--domain", DOMAIN, "--resolve", str(resolve),
                "--stats", str(scratch / "stats.json"), "--concurrency", str(args.concurrency),
                "--storage", storage, "--storage-dir", str(scratch / "storage")]

    def pages(scratch: Path, _stdout: str) -> int:
        return int(json.loads((scratch / "stats.json").read_text())["pages"])

    return Crawler(name, command, pages, args.timeout)


def has_workers_option() -> bool:
    out = subprocess.run([str(VENV_BIN / "webgather"), "crawl", "--help"], capture_output=True, text=True)
    return "--workers" in out.stdout


# -- report ------------------------------------------------------------------------------

def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def medians(crawler: Crawler) -> dict[str, float]:
    good = [r for r in crawler.runs if r.ok]
    return {
        "pages": median([r.pages for r in good]), "wall_s": median([r.wall_s for r in good]),
        "pages_per_s": median([r.pages_per_s for r in good]),
        "cpu_ms_per_page": median([r.cpu_ms_per_page for r in good]),
        "peak_rss_mib": median([r.peak_rss_mib for r in good]),
        "last_page_s": median([r.last_page_s for r in good if r.last_page_s is not None]),
    }


def machine_line(scrapy_version: str) -> str:
    model = "?"
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    nginx_version = subprocess.run([ensure_nginx(), "-v"], capture_output=True, text=True).stderr.strip().split("/")[-1]
    import aiohttp

    return (f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs ({model}), "
            f"Python {platform.python_version()}, Scrapy {scrapy_version}, aiohttp {aiohttp.__version__}, "
            f"nginx {nginx_version}")


def report(crawlers: list[Crawler], header: list[str]) -> str:
    lines = [*header, "", "per run (order alternates each round):"]
    for crawler in crawlers:
        for i, r in enumerate(crawler.runs):
            flag = "" if r.ok else f"  FAILED {r.note}"
            lines.append(f"  {r.crawler:<15} round {i + 1}: {r.pages:6d} pages {r.wall_s:7.2f} s "
                         f"{r.pages_per_s:7.1f} pages/s {r.cpu_ms_per_page:6.2f} ms CPU/page "
                         f"{r.peak_rss_mib:7.1f} MiB{_times(r)}{flag}")
            if r.cpu_split:
                lines.append(f"  {'':<15}          {r.cpu_split}")
    head = f"  {'crawler':<15} {'pages':>6} {'wall s':>7} {'pages/s':>8} {'CPU ms/page':>12} {'peak RSS MiB':>13}"
    lines += ["", "medians:", head]
    table = {c.name: medians(c) for c in crawlers if any(r.ok for r in c.runs)}
    for crawler in crawlers:
        if crawler.name not in table:
            why = crawler.runs[0].note if crawler.runs else "not run"
            lines.append(f"  {crawler.name:<15} no run finished ({why})")
    for name, m in table.items():
        lines.append(f"  {name:<15} {m['pages']:6.0f} {m['wall_s']:7.2f} {m['pages_per_s']:8.1f} "
                     f"{m['cpu_ms_per_page']:12.3f} {m['peak_rss_mib']:13.1f}")
    lines += ["", "ratios (medians of this run; row / column):"]
    lines += _ratios(table)
    lines += ["", "per-round ratios of one webgather node's pages/s (the median, then each round's):"]
    lines += _paired(crawlers)
    lines += ["", "targets (one webgather node unless said):"]
    lines += _targets(table)
    lines += ["", "capabilities (as run here):", *capability_table([c.name for c in crawlers])]
    return "\n".join(lines)


def _times(run: Run) -> str:
    if run.pages_99_s is None or run.last_page_s is None:
        return ""
    return f", 99 % of pages by {run.pages_99_s:.2f} s, last at {run.last_page_s:.2f} s"


def _ratio_line(name: str, other: str, table: dict[str, dict[str, float]]) -> str:
    a, b = table[name], table[other]
    return (f"  {name + '/' + other:<24} pages/s {a['pages_per_s'] / b['pages_per_s']:6.2f}x   "
            f"CPU/page {a['cpu_ms_per_page'] / b['cpu_ms_per_page']:6.3f}x   "
            f"peak RSS {a['peak_rss_mib'] / b['peak_rss_mib']:5.2f}x")


def _ratios(table: dict[str, dict[str, float]]) -> list[str]:
    """Every row against Scrapy, then each webgather row against every peer."""
    out = [_ratio_line(name, "scrapy", table) for name in table if name != "scrapy" and "scrapy" in table]
    for name in [n for n in table if n.startswith("webgather")]:
        out += [_ratio_line(name, peer, table) for peer in table if not peer.startswith("webgather") and peer != "scrapy"]
    for other in ("webgather-w2", "webgather-pure"):
        if "webgather" in table and other in table:
            out.append(_ratio_line(other, "webgather", table))
    return out


def _paired(crawlers: list[Crawler]) -> list[str]:
    """webgather's pages/s over each other row's, round by round: a round's runs follow one another, so
    on a busy machine these move less than the ratio of the medians."""
    by_name = {c.name: c for c in crawlers}
    if "webgather" not in by_name:
        return ["  (no webgather row)"]
    out = []
    for other in (c for c in crawlers if c.name != "webgather"):
        ratios = [w.pages_per_s / o.pages_per_s for w, o in zip(by_name["webgather"].runs, other.runs)
                  if w.ok and o.ok and o.pages_per_s > 0]
        if ratios:
            out.append(f"  webgather/{other.name:<15} {median(ratios):6.2f}x  ({' '.join(f'{r:.2f}' for r in ratios)})")
    return out


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _targets(table: dict[str, dict[str, float]]) -> list[str]:
    """The benchmark targets: one node against its peers (pages/s, CPU, RSS), two workers against one
    node, and a crawl's end near its last page."""
    if "webgather" not in table:
        return ["  (no webgather row)"]
    wg, out = table["webgather"], []
    cpu = wg["cpu_ms_per_page"]
    if "scrapy" in table:
        s = table["scrapy"]
        speed, rss = wg["pages_per_s"] / s["pages_per_s"], wg["peak_rss_mib"] / s["peak_rss_mib"]
        out.append(f"  pages/s >= 12x Scrapy's: {speed:.2f}x, {_verdict(speed >= 12)}")
        out.append(f"  peak RSS <= 1/2 of Scrapy's: {rss:.2f}x, {_verdict(rss <= 1 / 2)}")
    if "crawlee-mem" in table:
        speed = wg["pages_per_s"] / table["crawlee-mem"]["pages_per_s"]
        out.append(f"  pages/s >= 5x Crawlee's (memory storage): {speed:.2f}x, {_verdict(speed >= 5)}")
    if "lean" in table:
        lean_cpu = cpu / table["lean"]["cpu_ms_per_page"]
        out.append(f"  CPU/page <= 0.85x the lean loop's: {lean_cpu:.3f}x, {_verdict(lean_cpu <= 0.85)}")
    if "webgather-w2" in table:
        w2 = table["webgather-w2"]["pages_per_s"] / wg["pages_per_s"]
        out.append(f"  --workers 2 >= 1.6x one node's pages/s: {w2:.2f}x, {_verdict(w2 >= 1.6)}")
    for name in (n for n in ("webgather", "webgather-w2") if n in table):
        last, wall = table[name]["last_page_s"], table[name]["wall_s"]
        if last == last:  # not NaN: the run's crawl log gave its last page's time
            out.append(f"  {name} wall within 10 % of its last page's fetch: {wall:.2f} s vs {last:.2f} s "
                       f"({wall / last:.2f}x), {_verdict(wall <= 1.1 * last)}")
    return out


CAPABILITIES = ("robots.txt obeyed", "one connection per host", "WARC archive", "resumable state", "link graph")
CAPABILITY_ROWS: dict[str, tuple[str, ...]] = {
    "webgather": ("yes (webgather group)", "yes", "yes (gzip)", "yes (frontier, seen-set)", "yes (link log)"),
    "webgather-w2": ("yes (webgather group)", "yes", "yes (gzip)", "yes (frontier, seen-set)", "yes (link log)"),
    "webgather-pure": ("yes (webgather group)", "yes", "yes (gzip)", "yes (frontier, seen-set)", "yes (link log)"),
    "scrapy": ("yes (webgather group)", "no (per-host limit = concurrency)", "no", "no (JOBDIR unset)", "no"),
    "lean": ("yes (webgather group)", "yes", "no", "no", "no"),
    "crawlee": ("yes (* group only)", "no (no per-host limit)", "no", "yes (file request queue)", "no"),
    "crawlee-mem": ("yes (* group only)", "no (no per-host limit)", "no", "no (memory storage)", "no"),
}
"""What each row does here, beside its figures; a peer that lacks something keeps its row."""


def capability_table(names: list[str]) -> list[str]:
    widths = [max(len(h), *(len(CAPABILITY_ROWS[n][i]) for n in names)) for i, h in enumerate(CAPABILITIES)]
    def row(first: str, cells: tuple[str, ...]) -> str:
        return "  " + f"{first:<15}" + " | ".join(f"{c:<{w}}" for c, w in zip(cells, widths)).rstrip()
    return [row("crawler", CAPABILITIES), *(row(n, CAPABILITY_ROWS[n]) for n in names)]


# -- main -----------------------------------------------------------------------------------

ROWS = ("webgather", "scrapy", "lean", "crawlee", "crawlee-mem", "webgather-w2", "webgather-pure")

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--pages-per-host", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per crawl before it is killed")
    parser.add_argument("--workers-timeout", type=float, default=120.0,
                        help="the same for webgather --workers 2 (killed runs report pages from the crawl logs)")
    parser.add_argument("--only", default=",".join(ROWS), help=f"comma-separated rows among {','.join(ROWS)} (default: all)")
    parser.add_argument("--scrapy", default="scrapy>=2.11,<3", help="pip requirement for Scrapy's venv")
    parser.add_argument("--crawlee", default="crawlee[parsel,httpx]>=1.11,<2", help="pip requirement for Crawlee's venv")
    parser.add_argument("--install-peers", action="store_true",
                        help="install what is missing: nginx (apt-get), Scrapy and Crawlee (PyPI, into bench/.venv-*); "
                             "without it their rows are skipped, saying so")
    parser.add_argument("--work", type=Path, default=BENCH / "results" / "vs_scrapy")
    parser.add_argument("--json", type=Path, default=None, help="also write every run as JSON here")
    args = parser.parse_args()
    unknown = sorted(set(args.only.split(",")) - set(ROWS))
    if unknown:
        parser.error(f"--only: unknown row(s) {', '.join(unknown)}; choose among {','.join(ROWS)}")
    return args


def main() -> int:
    args = parse_args()
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    ensure_nginx(args.install_peers)
    wanted = set(args.only.split(","))
    notes = []
    port = free_port()
    servers_conf, files = export_web(args.work, args, port)
    resolve = args.work / "resolve.txt"
    n_addresses = write_resolve_file(servers_conf, resolve)
    seed = f"http://h0001.{DOMAIN}:{port}/"
    if wanted & {"webgather", "webgather-w2", "webgather-pure"}:
        byte_compile(webgather_package())
    crawlers = [webgather_crawler("webgather", seed, resolve, args, None)] if "webgather" in wanted else []
    scrapy_version = "-"
    if "scrapy" in wanted:
        python = ensure_scrapy(args.scrapy, args.install_peers)
        if python is None:
            notes.append(skipped("scrapy", SCRAPY_VENV, args.scrapy))
        else:
            scrapy_version = version_of(python, "scrapy")
            crawlers.append(scrapy_crawler(python, seed, resolve, args))
    if "lean" in wanted:
        crawlers.append(lean_crawler(seed, resolve, args))
    crawlee_version = "-"
    if wanted & {"crawlee", "crawlee-mem"}:
        python = ensure_crawlee(args.crawlee, args.install_peers)
        if python is None:
            notes.append(skipped("crawlee", CRAWLEE_VENV, args.crawlee))
        else:
            crawlee_version = version_of(python, "crawlee")
            for name, storage in (("crawlee", "file"), ("crawlee-mem", "memory")):
                if name in wanted:
                    crawlers.append(crawlee_crawler(name, python, seed, resolve, args, storage))
    workers_note = "webgather-w2: not run"
    if "webgather-w2" in wanted:
        if has_workers_option():
            crawlers.append(webgather_crawler("webgather-w2", seed, resolve, args, 2))
            workers_note = "webgather-w2: webgather crawl --workers 2"
        else:
            workers_note = "webgather-w2: skipped (webgather crawl has no --workers option yet)"
    if "webgather-pure" in wanted:
        crawlers.append(webgather_crawler("webgather-pure", seed, resolve, args, None, native=False))
    header = [
        f"vs_scrapy {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {machine_line(scrapy_version)}, "
        f"Crawlee {crawlee_version}",
        f"web: {args.hosts} hosts x {args.pages_per_host:g} pages (seed {args.seed}), {files} static files, "
        f"nginx (1 worker) on {n_addresses} loopback addresses, port {port}; seed {seed}",
        f"{args.rounds} rounds, concurrency {args.concurrency}; {workers_note}",
        *notes,
    ]
    print("\n".join(header), flush=True)
    if not crawlers:
        print("vs_scrapy: no row left to run")
        return 0
    with nginx(servers_conf, args.work / "nginx", port, "127.0.1.1"):
        for round_no in range(args.rounds):
            order = crawlers[round_no % len(crawlers):] + crawlers[: round_no % len(crawlers)]
            for crawler in order:
                run = run_once(crawler, args.work / "runs" / crawler.name)
                crawler.runs.append(run)
                print(f"  round {round_no + 1} {run.crawler:<15} {run.pages} pages in {run.wall_s:.2f} s"
                      f"{'' if run.ok else ' FAILED ' + run.note}", flush=True)
    print()
    print(report(crawlers, header))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for c in crawlers for r in c.runs], indent=1))
    return 0 if all(r.ok for c in crawlers for r in c.runs) else 1


if __name__ == "__main__":
    sys.exit(main())
