"""The destination guard: which resolved addresses a crawl may connect to, whatever the URL's spelling."""

from __future__ import annotations

import ipaddress

import pytest

from webgather.config import FetchConfig, load
from webgather.errors import ConfigError, ForbiddenAddress
from webgather.fetch.guard import AddressGuard, is_private
from webgather.fetch.resolver import Resolver
from webgather.clock import FakeClock
from webgather.urls import canonicalize, hostname

PRIVATE = [
    "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
    "0.0.0.0", "224.0.0.1", "239.1.2.3", "240.0.0.1", "255.255.255.255",
    "::1", "::", "fe80::1", "fc00::1", "fd12::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
    "2002:7f00:1::",  # 6to4 carrying 127.0.0.1
]
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", PRIVATE)
def test_private_addresses_are_refused(address: str) -> None:
    assert is_private(ipaddress.ip_address(address))
    guard = AddressGuard(deny_private=True)
    for _ in range(2):  # the second verdict comes from the guard's cache
        with pytest.raises(ForbiddenAddress, match="private address"):
            guard.check("h", address)
    assert AddressGuard(deny_private=False).permits(address)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert AddressGuard(deny_private=True).permits(address)


def test_an_answer_that_is_no_address_is_refused_not_a_traceback() -> None:
    with pytest.raises(ForbiddenAddress, match="not an IP address"):
        AddressGuard(deny_private=True).check("h", "not-an-ip")


def test_allow_list_exempts_exactly_its_networks() -> None:
    guard = AddressGuard(deny_private=True, allow=["127.0.0.0/8", "fd00::/8", "10.0.0.5"])
    assert guard.permits("127.0.1.1") and guard.permits("::ffff:127.0.0.2") and guard.permits("fd00::7")
    assert guard.permits("10.0.0.5") and not guard.permits("10.0.0.6")
    assert not guard.permits("::1") and not guard.permits("169.254.169.254")


def test_deny_is_the_default_and_bad_networks_are_config_errors() -> None:
    assert FetchConfig().deny_private_addresses is True
    assert load(None, {}, {"fetch.allow_addresses": ("127.0.0.0/8",)}).fetch.allow_addresses == ("127.0.0.0/8",)
    with pytest.raises(ConfigError, match="allow_addresses"):
        load(None, {}, {"fetch.allow_addresses": ("127.0.0.0/33",)})
    with pytest.raises(ConfigError, match="allow_addresses"):
        load(None, {"WEBGATHER_FETCH__ALLOW_ADDRESSES": "localhost"}, None)


@pytest.mark.parametrize("spelling", ["127.0.0.1", "0x7f000001", "2130706433", "127.1", "0177.0.0.1",
                                      "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"])
async def test_every_spelling_of_loopback_is_refused_by_the_resolver(spelling: str) -> None:
    url = canonicalize(f"http://{spelling}:6379/")
    assert url is not None
    resolver = Resolver.from_config(FetchConfig(), FakeClock(), lookup=_no_dns)
    with pytest.raises(ForbiddenAddress):
        await resolver.resolve(hostname(url))
    allowed = Resolver.from_config(FetchConfig(allow_addresses=("127.0.0.0/8", "::1")), FakeClock(), lookup=_no_dns)
    assert await allowed.resolve(hostname(url)) in ("127.0.0.1", "::1", "::ffff:7f00:1")


async def test_names_are_judged_on_their_answer_static_or_dns(tmp_path: object) -> None:
    answers = {"metadata.example.com": ["169.254.169.254"], "www.example.com": ["93.184.216.34"]}

    async def lookup(name: str) -> list[str]:
        return answers[name]

    resolver = Resolver.from_config(FetchConfig(), FakeClock(), lookup=lookup)
    assert await resolver.resolve("www.example.com") == "93.184.216.34"
    with pytest.raises(ForbiddenAddress, match="169.254.169.254"):
        await resolver.resolve("metadata.example.com")
    resolver.pin("intranet.example.com", "10.0.0.1")  # static answers are checked too
    with pytest.raises(ForbiddenAddress):
        await resolver.resolve("intranet.example.com")


async def _no_dns(name: str) -> list[str]:
    raise AssertionError(f"an IP literal must not be looked up: {name}")
