"""The page engine of one node: its parts built from a config (``parts``), the run loop (``node``),
the per-fetch pipeline (``pipeline``), parsing off the loop (``parse_pool``, ``parse_worker``), the
robots gate's IO (``robots_driver``, ``robots_fetch``, ``robots_store``), the settled robots state and
cookies a bucket's hosts carry to their next owner (``host_settled``), page hooks and items,
rendering, requisites, counters and signals. The bottom of the runtime: it imports nothing above it.
"""
