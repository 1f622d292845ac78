"""``--shared-store`` and ``[cluster] checkpoint_s``: accepted only where they do something, one-line errors."""

from __future__ import annotations

import pytest

from webgather.cli import main
from webgather.config import load
from webgather.errors import ConfigError


def test_the_url_and_checkpoint_interval_are_checked() -> None:
    config = load(None, None, {"cluster.shared_store": "s3://b/p", "cluster.checkpoint_s": 5.0})
    assert config.cluster.shared_store == "s3://b/p"
    with pytest.raises(ConfigError, match="file:///path or s3://"):
        load(None, None, {"cluster.shared_store": "http://x/y"})
    with pytest.raises(ConfigError, match="below cluster.claim_idle_s"):
        load(None, None, {"cluster.shared_store": "file:///x", "cluster.checkpoint_s": 30.0,
                          "cluster.claim_idle_s": 30.0})
    with pytest.raises(ConfigError, match="0 < cluster.checkpoint_s"):
        load(None, None, {"cluster.checkpoint_s": 0.0})
    assert load(None, None, {"cluster.claim_idle_s": 5.0}).cluster.checkpoint_s == 10.0  # no store: unconstrained


def test_shared_store_without_a_cluster_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crawl", "http://127.0.0.1:9/", "--shared-store", "file:///tmp/x", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--shared-store applies to a cluster crawl" in err and len(err.strip().splitlines()) == 1
