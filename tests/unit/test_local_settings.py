"""A node's own settings (``config.local``): file < environment < flags, only its own keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgather.cluster.definition import CrawlDefinition
from webgather.config import CrawlConfig
from webgather.config.local import local_layers, local_of
from webgather.errors import ConfigError


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    file = tmp_path / "node.toml"
    file.write_text('pin_cpu = "off"\nmetrics = "9100"\n[fetch]\nconcurrency = 9\nsource_address = "127.0.0.2"\n')
    env = {"WEBGATHER_FETCH__CONCURRENCY": "3", "WEBGATHER_METRICS": "9200",
           "WEBGATHER_SCOPE__MODE": "any"}  # the crawl's setting: the definition's, not this node's
    local = local_layers(file, env, {"metrics": "9300", "fetch.source_address": None})
    crawl = CrawlDefinition.of(CrawlConfig(), ["http://a.test/"], 0.0)
    config = crawl.crawl_config(**local)
    assert {k: v for k, v in local_of(config).items() if v is not None} == {
        "fetch.concurrency": 3, "pin_cpu": "off", "fetch.source_address": "127.0.0.2", "metrics": "9300"}
    assert config.scope.mode == "seed-hosts"


def test_a_node_file_that_sets_the_crawl_s_settings_is_refused_in_one_line(tmp_path: Path) -> None:
    file = tmp_path / "node.toml"
    file.write_text('[fetch]\nconcurrency = 9\n[scope]\nmode = "any"\n')
    with pytest.raises(ConfigError) as raised:
        local_layers(file, {}, {})
    assert "scope.mode belong to the crawl's definition" in str(raised.value)
    assert "\n" not in str(raised.value)
