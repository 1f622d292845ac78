"""Cost per discovered URL of the [scope] rules: Scope.clean then Scope.reject, as make_items runs them.

20,000 synthetic-web-like URLs with a query (``?page=N&sort=new&sid=N``), each rule set timed
``--runs`` times over all of them; prints the median and the best run in microseconds per URL.

    .venv/bin/python bench/scope_rules.py
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from webgather.config import ScopeConfig
from webgather.scope import Scope

RULE_SETS = {
    "no rules": ScopeConfig(mode="any"),
    "1 exclude regex": ScopeConfig(mode="any", exclude=(r"/a/c/",)),
    "2 include_surt": ScopeConfig(mode="any", include_surt=("http://(test,web,h0001,", "test,web,h0002)/")),
    "strip 2 params": ScopeConfig(mode="any", strip_query_params=("sid", "utm_*")),
    "all three": ScopeConfig(mode="any", exclude=(r"/a/c/",), include_surt=("http://(test,web,",),
                             strip_query_params=("sid", "utm_*")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(1)
    urls = [f"http://h{rng.randrange(100):04d}.web.test/{rng.choice(['p', 'a/b', 'a/c', 'list'])}/{i}"
            f"?page={i}&sort=new&sid={rng.randrange(10**6)}" for i in range(args.urls)]
    for name, config in RULE_SETS.items():
        scope = Scope(config)
        runs = []
        for _ in range(args.runs):
            start = time.perf_counter()
            for url in urls:
                scope.reject(scope.clean(url), 1)
            runs.append((time.perf_counter() - start) / len(urls) * 1e6)
        print(f"{name:16s} median {statistics.median(runs):5.2f} us/URL, best {min(runs):5.2f}")


if __name__ == "__main__":
    main()
