"""The documents' own figures, printed beside ours (docs: seeds.md, documents 1 and 2).

Document 2 (Yan's slides) measured its national crawl: 2.28 M pages, 58.6 M
links, 548.72 pages per site, 12.92 KB per page on average, average
out-degree 25.7, 1 % of links leaving the country, in-degree power law with
exponent 1.86, "diameter" 17 (the slides call the average shortest-path
length so). Document 1 (WebGather 2.0) reports load-balance variances of the
per-hour normalized share between 1e-5 and 1e-3 (its Table 1). Neither gives
bow-tie sizes or core counts, so none are printed for those.
"""

from __future__ import annotations

__all__ = ["PAPER"]

PAPER: dict[str, float] = {
    "pages": 2_280_000,
    "links": 58_600_000,
    "pages_per_host": 548.72,
    "avg_page_kb": 12.92,
    "avg_out_degree": 25.7,
    "outside_share": 0.01,
    "in_degree_alpha": 1.86,
    "mean_distance": 17.0,
    "load_variance_min": 1e-5,
    "load_variance_max": 1e-3,
}
"""Figure name -> the documents' value."""
