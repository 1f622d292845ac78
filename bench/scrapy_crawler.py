"""The Scrapy side of bench/vs_scrapy.py; runs under bench/.venv-scrapy's Python.

A CrawlSpider following every link (LinkExtractor, the idiomatic Scrapy
crawl) inside ``--domain`` (allowed_domains), robots.txt obeyed, no delay, ``--concurrency``
requests overall and per domain. Host names resolve through a static
``host address`` file by a resolver installed on Twisted's reactor, so only
the (loopback) addresses in that file are contacted. ROBOTSTXT_USER_AGENT is
webgather's product token so both crawlers obey the same robots.txt group.

    python bench/scrapy_crawler.py SEED --domain web.test --resolve FILE --stats OUT.json

Writes Scrapy's stats (plus ``pages``: responses that were not robots.txt) to ``--stats``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor
from scrapy.settings import default_settings
from scrapy.spiders import CrawlSpider, Rule
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

TABLE: dict[str, str] = {}


@implementer(IResolverSimple)
class StaticResolver:
    """Answers from TABLE; every other name fails (nothing off loopback is reached)."""

    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> StaticResolver:
        return cls(reactor)

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Any = ()) -> defer.Deferred[str]:  # noqa: N802 (Twisted's name)
        address = TABLE.get(name.lower())
        if address is None:
            return defer.fail(DNSLookupError(name))
        return defer.succeed(address)


class FollowAll(CrawlSpider):  # type: ignore[misc]  # scrapy is not installed where mypy runs
    name = "follow_all"

    def __init__(self, seed: str, domain: str, **kwargs: Any) -> None:
        self.start_urls = [seed]
        self.allowed_domains = [domain]
        # scope by OffsiteMiddleware (allowed_domains): LinkExtractor's allow_domains
        # compares the netloc, port included, so it would drop every link here
        self.rules = (Rule(LinkExtractor(), follow=True),)
        super().__init__(**kwargs)


def settings(concurrency: int, log_level: str) -> dict[str, Any]:
    resolver_key = "TWISTED_DNS_RESOLVER" if hasattr(default_settings, "TWISTED_DNS_RESOLVER") else "DNS_RESOLVER"
    return {
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": "webgather",
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "LOG_LEVEL": log_level,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "RETRY_ENABLED": True,
        resolver_key: f"{__name__}.StaticResolver",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed")
    parser.add_argument("--domain", required=True)
    parser.add_argument("--resolve", required=True)
    parser.add_argument("--stats", required=True)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args()
    with open(args.resolve, encoding="ascii") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                host, address = line.split()[:2]
                TABLE[host] = address
    process = CrawlerProcess(settings(args.concurrency, args.log_level))
    crawler = process.create_crawler(FollowAll)
    process.crawl(crawler, seed=args.seed, domain=args.domain)
    process.start()
    stats = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
    stats["pages"] = int(stats.get("response_received_count", 0)) - int(stats.get("robotstxt/response_count", 0))
    with open(args.stats, "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=1)


if __name__ == "__main__":
    main()
