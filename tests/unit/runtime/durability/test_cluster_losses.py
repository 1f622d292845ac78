"""Nothing silent: the loss counters become one line per increase, a summary entry and a status line."""

from __future__ import annotations

from webgather.cluster.mapping import initial
from webgather.cluster.status import status_text
from webgather.runtime.durability.losses import Losses, loss_text


def test_losses_are_one_line_when_they_first_show_and_again_only_when_they_grow() -> None:
    losses = Losses("n1")
    assert losses.seen({"runs": 1, "recovered_buckets": 5}) is None and not losses.any()
    line = losses.seen({"unrecoverable_buckets": 1365})
    assert line is not None and "\n" not in line
    assert line.startswith("webgather node n1: DATA LOST: unrecoverable_buckets 1365 (")
    assert losses.seen({"unrecoverable_buckets": 1365}) is None  # told once, not at every beat
    grown = losses.seen({"unrecoverable_buckets": 1365, "buckets_started_empty": 2})
    assert grown is not None and "unrecoverable_buckets 1365, buckets_started_empty 2" in grown
    assert losses.any() and losses.as_dict() == {"unrecoverable_buckets": 1365, "buckets_started_empty": 2}
    assert loss_text({}) == "" and loss_text({"recovered_buckets": 3}) == ""


def test_cluster_status_shows_the_losses() -> None:
    table = initial(["a"], 8)
    text = status_text({"a": {"idle": True, "applied": True}}, table, {"runs": 1, "unrecoverable_buckets": 4}, "c")
    assert "DATA LOST: unrecoverable_buckets 4" in text
    assert "DATA LOST" not in status_text({"a": {}}, table, {"runs": 1, "recovered_buckets": 4}, "c")
