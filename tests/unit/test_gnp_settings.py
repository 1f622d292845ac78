"""``--partition-by gnp`` settings: checked at load, flags map onto them, stray flags are refused."""

from __future__ import annotations

import argparse

import pytest

from webgather.cli import main
from webgather.commands.options import add_cluster_options, add_crawl_options, config_from_args
from webgather.commands.options import add_recrawl_options
from webgather.config import load
from webgather.errors import ConfigError

LANDMARKS = ["http://l1.test/robots.txt", "http://l2.test/robots.txt"]


def test_gnp_needs_two_landmarks_and_sane_numbers() -> None:
    with pytest.raises(ConfigError, match="gnp_landmarks"):
        load(None, {}, {"cluster.partition_by": "gnp", "cluster.gnp_landmarks": LANDMARKS[:1]})
    for key, bad in (("cluster.gnp_k", 0), ("cluster.gnp_samples", 0), ("cluster.gnp_wait_s", 0.0),
                     ("cluster.gnp_modulus_ms", -1.0)):
        with pytest.raises(ConfigError, match="gnp"):
            load(None, {}, {"cluster.partition_by": "gnp", "cluster.gnp_landmarks": LANDMARKS, key: bad})
    config = load(None, {}, {"cluster.partition_by": "gnp", "cluster.gnp_landmarks": LANDMARKS})
    assert config.cluster.gnp_landmarks == tuple(LANDMARKS) and config.cluster.gnp_k == 3


def test_flags_map_onto_the_settings_and_stray_ones_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_crawl_options(parser)
    add_recrawl_options(parser, continuous=True)
    add_cluster_options(parser)
    args = parser.parse_args(["--partition-by", "gnp", "--gnp-landmark", LANDMARKS[0], "--gnp-landmark",
                              LANDMARKS[1], "--gnp-k", "1"])
    config = config_from_args(args)
    assert config.cluster.partition_by == "gnp" and config.cluster.gnp_landmarks == tuple(LANDMARKS)
    assert config.cluster.gnp_k == 1
    assert main(["crawl", "http://a.test/", "--workers", "2", "--gnp-k", "2"]) == 2
    assert "--partition-by gnp" in capsys.readouterr().err
