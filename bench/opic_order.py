"""OPIC against breadth-first in a running node: how important the first pages fetched are, and CPU per page.

    .venv/bin/python bench/opic_order.py --hosts 20 --pages-per-host 400 --rounds 3

The static web of bench/vs_scrapy.py (``webgather testweb export``, served by
nginx on loopback) is crawled by ``webgather crawl`` with ``frontier.order =
"bfs"`` and ``"opic"`` in turn, round after round (bench/node_ab.py's runner:
CPU and peak RSS of the crawl process). For each run, the pages fetched in
crawl-log order are ranked on the crawl's own link graph (the link log that
``webgather analyze`` reads): the mean in-degree and the mean PageRank (x the
number of pages, so 1.0 is an average page; damping 0.85) of the first 10 % and
20 % of the pages fetched. Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import node_ab  # noqa: E402  (the interleaved runner)
import vs_scrapy as vs  # noqa: E402  (export, nginx, measuring)

from webgather.sim.order import pagerank  # noqa: E402
from webgather.store.crawllog import read_crawl_log  # noqa: E402
from webgather.store.graphread import read_link_graph  # noqa: E402

SHARES = (0.1, 0.2)


def importance(out: Path) -> dict[str, float]:
    """Mean in-degree and PageRank of the first 10 % / 20 % of the pages fetched (crawl-log order)."""
    graph = read_link_graph(out, anchor_urls=False)
    assert graph.urls is not None
    index = {url: i for i, url in enumerate(graph.urls)}
    order = [index[e["url"]] for log in sorted(out.rglob("crawl.log.jsonl")) for e in read_crawl_log(log)
             if e.get("kind") == "page" and e.get("status") == 200 and e["url"] in index]
    pages = np.array(order, dtype=np.int64)
    in_degree = np.bincount(graph.dst, minlength=graph.n_pages)
    rank = pagerank(graph) * graph.n_pages
    figures = {}
    for share in SHARES:
        first = pages[: int(round(share * len(pages)))]
        figures[f"in-degree {share:.0%}"] = float(in_degree[first].mean())
        figures[f"PageRank {share:.0%}"] = float(rank[first].mean())
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    node_ab.add_web_arguments(parser, rounds=3, hosts=20, pages_per_host=400.0, work="opic_order")
    args = parser.parse_args()
    servers_conf, port, resolve, config, seed = node_ab.prepare_web(args)
    opic = args.work / "opic.toml"
    opic.write_text('[politeness]\nmax_crawl_delay_s = 0.0\n[frontier]\norder = "opic"\n')
    src = BENCH.parent / "src"
    variants = [node_ab.Variant("bfs", src, []), node_ab.Variant("opic", src, ["--config", str(opic)])]
    figures: dict[str, list[dict[str, float]]] = {v.name: [] for v in variants}
    with vs.nginx(servers_conf, args.work / "nginx", port, "127.0.1.1"):
        for round_no in range(args.rounds):
            shift = round_no % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                run = node_ab.run_variant(variant, args, seed, resolve, config)
                variant.runs.append(run)
                figures[variant.name].append(importance(args.work / "runs" / variant.name / "out"))
                shown = "  ".join(f"{k} {v:.2f}" for k, v in figures[variant.name][-1].items())
                print(f"  round {round_no + 1} {variant.name:<5} {run.pages} pages {run.cpu_ms_per_page:.2f} ms/page"
                      f"  {shown}{'' if run.ok else ' FAILED ' + run.note}", flush=True)
    print(node_ab.report(variants))
    for name, runs in figures.items():
        print(f"{name:<5} medians: " + "  ".join(
            f"{key} {statistics.median(r[key] for r in runs):.2f}" for key in runs[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
