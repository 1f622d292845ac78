"""``webgather replay DIR [--port P] [--host H] [--pywb PATH]``: browse a crawl's archive through pywb.

pywb runs as a child process from an environment of its own: pywb 2.9.1 and
2.10.0 pin ``redis==2.10.6`` (and ``werkzeug``, ``fakeredis<1``),
which cannot share an environment with webgather's ``redis>=5``, so pip
refuses ``pywb`` as an extra of webgather (ResolutionImpossible). Install it
apart (``pipx install pywb``, or a venv of its own) and name its ``wayback``
program with ``--pywb`` unless it is on PATH or in the ``.venv-replay`` that
``scripts/setup`` makes (beside the checkout, or beside the virtualenv webgather runs in).

The collection (a merged index and pywb's ``config.yaml``, see
:mod:`webgather.store.pywbcoll`) is built in a temporary directory removed on
exit; the WARCs are read in place. The server binds 127.0.0.1 unless told
otherwise. Ctrl-C, SIGTERM or SIGHUP ends pywb (by its PID) and exits 0; a
SIGKILL of this process ends pywb too (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from webgather.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from webgather.store.pywbcoll import PywbCollection

__all__ = ["find_wayback", "register", "replay_venvs"]

_INSTALL_HINT = (
    "install pywb in an environment of its own (it pins redis 2.10.6, webgather needs redis>=5), "
    "e.g. `pipx install pywb` or `python3 -m venv ~/pywb && ~/pywb/bin/pip install pywb`, "
    "then pass --pywb ~/pywb/bin/wayback"
)
_REPLAY_VENV = ".venv-replay"
"""pywb's environment as ``scripts/setup`` makes it."""
_READY_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 10.0
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Besides Ctrl-C: signals that would otherwise end this process and leave pywb (in its own session) running."""


class _Stop(Exception):
    """SIGTERM or SIGHUP, turned into an exception so that the child is ended and the directory removed."""


def register(sub: Any) -> None:
    parser = sub.add_parser("replay", help="serve a crawl's WARCs through pywb (installed apart: see --pywb)")
    add = parser.add_argument
    add("dir", metavar="DIR",
        help="crawl directory (--out of a crawl; a cluster's DIR holds nodes/*), or a .wacz file")
    add("--port", type=_port, default=8080, help="port to serve on (default 8080; 0: a free one)")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; beyond loopback, anyone who reaches it browses the archive)")
    add("--pywb", metavar="PATH", default=None,
        help="pywb's wayback program, or the virtualenv pywb is installed in (default: the .venv-replay "
             "scripts/setup makes, beside the checkout or webgather's virtualenv; else `wayback` on PATH)")
    parser.set_defaults(func=_main)


def find_wayback(given: str | None) -> str:
    """The path of pywb's ``wayback`` program; :class:`ConfigError` (one line, how to install it) if none."""
    if given is not None:
        path = Path(given).expanduser()
        if path.is_dir():
            path = path / "bin" / "wayback"  # the root of pywb's virtualenv
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigError(f"--pywb {given}: no executable pywb `wayback` program there; {_INSTALL_HINT}")
        return str(path)
    places = replay_venvs()
    for venv in places:
        program = venv / "bin" / "wayback"
        if program.is_file() and os.access(program, os.X_OK):
            return str(program)
    found = shutil.which("wayback")
    if found is None:
        looked = ", ".join(str(venv / "bin" / "wayback") for venv in places)
        raise ConfigError(f"pywb not found (looked in {looked} and for `wayback` on PATH): {_INSTALL_HINT}")
    return found


def replay_venvs() -> list[Path]:
    """Where ``scripts/setup`` puts pywb's environment: ``.venv-replay`` beside the virtualenv webgather runs
    in (``.venv``) and beside the checkout webgather is imported from (an editable install), each once."""
    import webgather

    places = [Path(sys.prefix).resolve().parent / _REPLAY_VENV]
    checkout = Path(webgather.__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        places.append(checkout / _REPLAY_VENV)
    return list(dict.fromkeys(places))


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, not {value}")
    return value


def _main(args: argparse.Namespace) -> int:
    from webgather.store.pywbcoll import build_collection

    crawl_dir = Path(args.dir)
    wacz = crawl_dir.is_file() and crawl_dir.suffix.lower() == ".wacz"
    if not crawl_dir.is_dir() and not wacz:
        raise ConfigError(f"{crawl_dir} is not a directory (give the --out of a crawl) or a .wacz file")
    wayback = find_wayback(args.pywb)
    port = _usable_port(args.host, args.port)
    with tempfile.TemporaryDirectory(prefix="webgather-replay-") as temp:
        if wacz:  # webgather export's (store.wacz): its WARCs and index, unpacked into the temporary directory
            from webgather.store.wacz import unpack_wacz

            crawl_dir = unpack_wacz(crawl_dir, Path(temp) / "wacz")
        collection = build_collection(crawl_dir, Path(temp))
        child = _start(wayback, collection.root, args.host, port)
        previous = {signum: signal.signal(signum, _raise_stop) for signum in _STOP_SIGNALS}
        try:
            _wait_ready(child, args.host, port)
            _announce(collection, crawl_dir, _base_url(args.host, port))
            child.wait()
            raise StoreError(f"pywb exited with status {child.returncode} (its output is above)")
        except (KeyboardInterrupt, _Stop):
            print("replay stopped", flush=True)
            return 0
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            _end(child)


def _usable_port(host: str, port: int) -> int:
    """``port`` (0: a free one) if it can be bound on ``host`` now; else :class:`ConfigError`.

    Checked here because a port some other server listens on would accept the
    readiness probe while pywb fails to bind it. pywb binds a moment later:
    another process could still take the port in between.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as pywb's server does
            probe.bind((host, port))
            bound: int = probe.getsockname()[1]
    except OSError as exc:
        raise ConfigError(f"cannot serve on {host} port {port}: {exc.strerror or exc}") from None
    return bound


def _start(wayback: str, root: Path, host: str, port: int) -> subprocess.Popen[bytes]:
    """pywb in its own session: a terminal's Ctrl-C reaches this process, which ends pywb by PID."""
    command = [wayback, "--bind", host, "--port", str(port), "--directory", str(root)]
    try:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent)
    except OSError as exc:
        raise ConfigError(f"cannot start pywb ({wayback}): {exc.strerror or exc}; {_INSTALL_HINT}") from None


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when this process dies, even by SIGKILL (Linux's PR_SET_PDEATHSIG)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_ready(child: subprocess.Popen[bytes], host: str, port: int) -> None:
    """Return once pywb accepts connections; :class:`StoreError` if it exits or takes too long."""
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise StoreError(f"pywb exited with status {child.returncode} before serving on {host}:{port} (its output is above)")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)
    raise StoreError(f"pywb did not serve on {host}:{port} within {_READY_TIMEOUT_S:.0f} s")


def _announce(collection: PywbCollection, crawl_dir: Path, base: str) -> None:
    print(f"replaying {collection.captures} captures in {collection.warc_files} WARC files of {crawl_dir} through pywb")
    if collection.first_page is not None:
        timestamp, url = collection.first_page
        print(f"a page:  {base}/{timestamp}/{url}")
    print(f"open {base}/  (search it by URL; Ctrl-C stops the server)", flush=True)


def _base_url(host: str, port: int) -> str:
    from webgather.store.pywbcoll import COLLECTION

    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/{COLLECTION}"


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop()


def _end(child: subprocess.Popen[bytes]) -> None:
    """End pywb by its PID: SIGTERM, then SIGKILL if it is still there after a while."""
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(timeout=_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
