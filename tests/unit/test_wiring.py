"""Parts are built complete by their constructors (or one factory): no module wires objects together
by assigning another object's attributes, or reads another object's private ones.

The scan (``ast``, every module under ``src/webgather``) flags:

* an assignment (``=``, ``+=``, annotated, or ``setattr``) to an attribute of anything but ``self``
  or ``cls``: ``keeper.rows = x``, and ``self.keeper.rows = x`` too (an attribute of self's part is
  that part's, not self's);
* a read of ``x._name`` where ``x`` is not ``self``, ``cls`` or ``super()`` (``self.part._name``
  included); namedtuple's public ``_replace``/``_asdict``/``_fields``/``_make`` are not private.

What remains allowed is listed below, each site with its reason: mutable *records* a module owns
and fills (a host's politeness state, a response draft, counters), the objects of foreign
libraries used through the attributes they document for it (argparse, zipfile, ssl, scipy), a
class's own factory or friend in the same module. An entry that no longer matches anything fails
too, so the lists only shrink.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "webgather"
OWN = {"self", "cls"}
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
PUBLIC_DESPITE_UNDERSCORE = {"os._exit"}
"""Documented public names that start with an underscore (``os._exit``: exit without cleanup)."""

RECORD = "a mutable record (plain fields, no behaviour) that this module owns and fills or updates"
COUNTERS = "a counters record (a stats dataclass) the module bumps; nobody is wired through it"
FOREIGN = "a standard-library or third-party object, configured through the attributes its API documents"
ARGS = "argparse's Namespace: the command normalizes its own parsed arguments"

ASSIGN_ALLOWED: dict[tuple[str, str], str] = {
    # -- records a module owns ---------------------------------------------------------
    ("frontier/policy.py", "st"): RECORD + ": a host's HostState (clock, errors, where it waits)",
    ("frontier/policy.py", "self.state(host)"): RECORD + ": a host's HostState (clock, errors, where it waits)",
    ("frontier/adopt.py", "st"): RECORD + ": the policy's HostState of a host handed over (its clock as left)",
    ("frontier/queues_sqlite.py", "h"): RECORD + ": a host's in-memory queue (_HostQueue)",
    ("frontier/queues_sqlite.py", "self._host(host)"): RECORD + ": a host's in-memory queue (_HostQueue)",
    ("frontier/seen_disk.py", "run"): RECORD + ": one sorted run of keys; its directory is built lazily",
    ("fetch/http.py", "draft"): RECORD + ": the FetchDraft a fetch fills as the response arrives",
    ("fetch/h1_client.py", "draft"): RECORD + ": the FetchDraft a fetch fills as the response arrives",
    ("fetch/via_aiohttp.py", "draft"): RECORD + ": the FetchDraft a fetch fills as the response arrives",
    ("fetch/h1_conn.py", "conn"): RECORD + ": the pool's idle Connection, stamped when it went idle",
    ("parse/links.py", "scan"): RECORD + ": the _Scan of one page, filled by the C walk's tuple",
    ("runtime/engine/page_hooks.py", "extracted"): RECORD + ": a page's extraction, its tree let go early (RSS)",
    ("runtime/engine/pipeline.py", "out"): RECORD + ": a page's extraction being assembled",
    ("runtime/engine/node.py", "extracted"): RECORD + ": a page's extraction, its sitemap list dropped once routed",
    ("testweb/wire.py", "request"): RECORD + ": the test server's parsed request head",
    ("cluster/handoff.py", "waiting"): RECORD + ": Ownership's record of an awaited bucket",
    ("cluster/handoff.py", "self.awaiting[bucket]"): RECORD + ": Ownership's record of an awaited bucket",
    ("cluster/router.py", "buffer"): RECORD + ": a bucket's send buffer",
    ("cluster/inprocess.py", "stream"): RECORD + ": the in-process hub's stream of one bucket",
    ("sim/order.py", "state"): RECORD + ": the simulation's priority arrays",
    ("commands/analyze.py", "analysis"): RECORD + ": the analysis result, its timings completed by the command",
    # -- counters ------------------------------------------------------------------------
    ("cluster/router.py", "self.stats"): COUNTERS,
    ("runtime/engine/node.py", "self.stats"): COUNTERS,
    ("runtime/engine/robots_driver.py", "parts.stats"): COUNTERS,
    # -- foreign objects -----------------------------------------------------------------
    ("cli.py", "action"): FOREIGN + ": an argparse action's help text",
    ("commands/flag_settings.py", "action"): FOREIGN + ": an argparse action's help text",
    ("commands/demo.py", "args"): ARGS,
    ("commands/node.py", "args"): ARGS,
    ("commands/recrawl.py", "args"): ARGS,
    ("commands/redis_url.py", "args"): ARGS,
    ("store/wacz.py", "info"): FOREIGN + ": a zipfile.ZipInfo, before it is written",
    ("analysis/graphops.py", "matrix"): FOREIGN + ": a scipy CSR matrix's index arrays narrowed to int32",
    ("fetch/h1_client.py", "self._tls"): FOREIGN + ": an ssl.SSLContext made here (verification off on request)",
    ("runtime/metrics/export.py", "thread"): FOREIGN + ": a threading.Thread's name, before it starts",
    ("runtime/launch/forked.py", "sys"): FOREIGN + ": a forked worker's sys.stdout, stderr and argv, set as a new "
                                               "interpreter's would be",
    ("fetch/via_aiohttp.py", "protocol"): "aiohttp's response protocol: its read is wrapped to count 1xx heads "
                                          "(no public hook for them)",
    ("fetch/via_aiohttp.py", "self._session"): "aiohttp's hidden re-send of a request on a dropped connection, "
                                               "turned off (no public knob; our retry policy owns retries)",
    # -- one factory assembling what it built, before it returns it ------------------------
    ("frontier/persist.py", "queues"): "open_persistent, the resumed frontier's one factory: the journal "
                                       "exists only after the queues replayed it, the cash book is built "
                                       "from the replayed queues",
    ("frontier/persist.py", "cash"): "open_persistent, the resumed frontier's one factory: the cash book "
                                     "journals to the journal opened after the replay",
}

PRIVATE_ALLOWED: dict[tuple[str, str], str] = {
    ("cli.py", "parser._actions"): FOREIGN + ": argparse has no public list of a parser's actions",
    ("cli.py", "each._actions"): FOREIGN + ": argparse has no public list of a parser's actions",
    ("cli.py", "argparse._SubParsersAction"): FOREIGN + ": argparse's sub-command action type (no public name)",
    ("commands/flag_settings.py", "parser._actions"): FOREIGN + ": argparse has no public list of a parser's actions",
    ("fetch/cookies.py", "cookie._rest"): FOREIGN + ": http.cookiejar.Cookie keeps its extra attributes there "
                                          "(and takes them back as ``rest``)",
    ("fetch/cookies.py", "jar._cookies"): FOREIGN + ": http.cookiejar.CookieJar has no lookup by key",
    ("fetch/cookies.py", "shard.jar._cookies"): FOREIGN + ": http.cookiejar.CookieJar has no lookup by domain "
                                                "(a host's cookies handed off with its bucket)",
    ("fetch/via_aiohttp.py", "self._connector._acquired"): FOREIGN + ": aiohttp's connections in use "
                                                           "(no public count)",
    ("runtime/launch/forked.py", "atexit._clear"): FOREIGN + ": CPython has no public way to drop the parent's atexit "
                                                         "handlers in a forked child",
    ("runtime/launch/forked.py", "atexit._run_exitfuncs"): FOREIGN + ": CPython has no public way to run the atexit "
                                                                 "handlers before os._exit",
    ("_entry.py", "atexit._run_exitfuncs"): FOREIGN + ": CPython has no public way to run the atexit handlers "
                                            "before os._exit (an interrupted process ends through it)",
    ("_entry.py", "threading._shutdown"): FOREIGN + ": CPython has no public way to finish the executors' "
                                          "workers and join the other threads before os._exit, as its exit does",
    ("testweb/server.py", "server._ids"): "the test server's connection protocol, a friend class in its module",
    ("testweb/server.py", "self.server._connections"): "the test server's connection protocol, a friend class "
                                                       "in its module",
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


def _own(node: ast.expr) -> bool:
    """``self``/``cls`` themselves (``super()`` too, for a read)."""
    if isinstance(node, ast.Name):
        return node.id in OWN
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _assigned(tree: ast.Module) -> Iterator[tuple[int, ast.expr]]:
    """(line, object) of every attribute assignment in ``tree``: ``object.name = ...``."""
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and node.args:
            yield node.lineno, node.args[0]
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
            elif isinstance(target, ast.Starred):
                targets.append(target.value)
            elif isinstance(target, ast.Attribute):
                yield target.lineno, target.value


def _private_reads(tree: ast.Module) -> Iterator[tuple[int, ast.Attribute]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr.startswith("_") \
                and not node.attr.startswith("__") and node.attr not in NAMEDTUPLE_API:
            yield node.lineno, node


def wiring_sites() -> tuple[dict[tuple[str, str], list[int]], dict[tuple[str, str], list[int]]]:
    """Assignments to another object's attributes and reads of another's private ones, by
    (module, expression), with their lines."""
    assigns: dict[tuple[str, str], list[int]] = {}
    privates: dict[tuple[str, str], list[int]] = {}
    for module, tree in _modules():
        for line, owner in _assigned(tree):
            if not _own(owner):
                assigns.setdefault((module, ast.unparse(owner)), []).append(line)
        for line, read in _private_reads(tree):
            if not _own(read.value) and ast.unparse(read) not in PUBLIC_DESPITE_UNDERSCORE:
                privates.setdefault((module, ast.unparse(read)), []).append(line)
    return assigns, privates


def _unexplained(found: dict[tuple[str, str], list[int]], allowed: dict[tuple[str, str], str]) -> list[str]:
    return [f"{module}:{lines[0]} {expr}" for (module, expr), lines in sorted(found.items())
            if (module, expr) not in allowed]


def test_no_part_assigns_another_objects_attributes() -> None:
    assigns, _ = wiring_sites()
    assert _unexplained(assigns, ASSIGN_ALLOWED) == [], (
        "wired after construction: give it to the constructor (or one factory), or ask the object "
        "through a method; a record may be allowed in ASSIGN_ALLOWED with its reason")


def test_no_part_reads_another_objects_private_attributes() -> None:
    _, privates = wiring_sites()
    assert _unexplained(privates, PRIVATE_ALLOWED) == [], "another object's private attribute: make it public, " \
        "or a read-only property"


def test_every_allowed_site_still_exists() -> None:
    """The allow-lists only shrink: an entry nothing matches any more is removed."""
    assigns, privates = wiring_sites()
    assert sorted(set(ASSIGN_ALLOWED) - set(assigns)) == []
    assert sorted(set(PRIVATE_ALLOWED) - set(privates)) == []


def test_the_scan_sees_the_wiring_it_forbids() -> None:
    """The four shapes of wiring, each found (and self's own attributes not)."""
    tree = ast.parse("def f(self, node, keeper):\n"
                     "    self.rows = 1\n"
                     "    node.keeper.transport = x\n"
                     "    self.keeper.rows = y\n"
                     "    a, keeper.report = 1, 2\n"
                     "    setattr(keeper, 'prepare', None)\n"
                     "    return node._leaving, self._end, super()._get, t._replace, os._exit\n")
    assigned = sorted(ast.unparse(owner) for _line, owner in _assigned(tree) if not _own(owner))
    assert assigned == ["keeper", "keeper", "node.keeper", "self.keeper"]
    reads = [ast.unparse(read) for _line, read in _private_reads(tree)
             if not _own(read.value) and ast.unparse(read) not in PUBLIC_DESPITE_UNDERSCORE]
    assert reads == ["node._leaving"]
