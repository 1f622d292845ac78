"""Two-stage mapping: bucket table, join/leave plans, moves."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.cluster.mapping import (
    DEFAULT_BUCKETS,
    BucketTable,
    bucket_of,
    initial,
    moves,
    plan_join,
    plan_leave,
    plan_membership,
)
from webgather.errors import ClusterError, ConfigError


def test_bucket_of_is_stable_and_in_range() -> None:
    assert bucket_of("example.com") == bucket_of("example.com")
    assert 0 <= bucket_of("example.com") < DEFAULT_BUCKETS
    assert 0 <= bucket_of("example.com", 7) < 7


def test_initial_is_contiguous_and_sorted() -> None:
    table = initial(["b", "a"], 5)
    assert table.owners == ("a", "a", "a", "b", "b")
    assert table.version == 0
    assert table.buckets_of("a") == (0, 1, 2)
    assert table.shares() == {"a": 3, "b": 2}
    assert table.owner(4) == "b"


def test_join_two_to_three_moves_a_third_from_the_most_loaded() -> None:
    old = initial(["a", "b"], 6)  # a: 0,1,2  b: 3,4,5
    new = plan_join(old, "c")
    assert new.version == 1
    # c takes 6 // 3 = 2 buckets: one from a (tie -> smallest id, its highest bucket),
    # then one from b (now the most loaded).
    assert moves(old, new) == {2: ("a", "c"), 5: ("b", "c")}
    assert new.shares() == {"a": 2, "b": 2, "c": 2}


def test_join_takes_from_most_loaded_first() -> None:
    old = initial(["a", "b"], 7)  # a: 4, b: 3
    new = plan_join(old, "c")  # c gets 7 // 3 = 2: from a (4), then the a/b tie (3, 3) -> a
    assert moves(old, new) == {3: ("a", "c"), 2: ("a", "c")}
    assert new.shares() == {"a": 2, "b": 3, "c": 2}


def test_leave_three_to_two_spreads_evenly() -> None:
    old = initial(["a", "b", "c"], 6)  # a: 0,1  b: 2,3  c: 4,5
    new = plan_leave(old, "b")
    assert new.version == 1
    assert moves(old, new) == {2: ("b", "a"), 3: ("b", "c")}
    assert new.shares() == {"a": 3, "c": 3}


def test_join_of_the_n_plus_first_node_moves_about_m_over_n_plus_1() -> None:
    table = initial([f"n{i}" for i in range(10)], 4096)
    new = plan_join(table, "n10")
    assert len(moves(table, new)) == 4096 // 11


def test_errors_are_webgather_errors() -> None:
    table = initial(["a"], 4)
    with pytest.raises(ClusterError):
        plan_join(table, "a")
    with pytest.raises(ClusterError):
        plan_leave(table, "a")  # the last node
    with pytest.raises(ClusterError):
        plan_leave(table, "zz")
    with pytest.raises(ClusterError):
        initial([], 4)
    with pytest.raises(ConfigError):
        initial(["a"], 0)
    with pytest.raises(ClusterError):
        table.owner(4)
    with pytest.raises(ClusterError):
        moves(table, initial(["a"], 5))
    with pytest.raises(ClusterError):
        BucketTable(0, 2, ("a",))
    with pytest.raises(ClusterError):
        BucketTable.from_dict({"version": 0})


def test_dict_round_trip() -> None:
    table = plan_join(initial(["a", "b"], 16), "c")
    assert BucketTable.from_dict(table.to_dict()) == table


def test_membership_no_change_is_the_same_table() -> None:
    table = initial(["a", "b"], 8)
    assert plan_membership(table, ["b", "a"]) is table
    replaced = plan_membership(table, ["x"])
    assert replaced.shares() == {"x": 8} and replaced.version == 1


def _check_invariants(table: BucketTable, live: set[str]) -> None:
    assert set(table.owners) <= live
    counts = [table.owners.count(n) for n in live]
    assert sum(counts) == table.n_buckets
    assert max(counts) - min(counts) <= 1


@settings(max_examples=60, deadline=None)
@given(
    n_buckets=st.one_of(st.integers(1, 6), st.integers(7, 200)),
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 11)), max_size=25),
    # small bucket counts make "more nodes than buckets" reachable
)
def test_invariants_under_random_joins_and_leaves(
    n_buckets: int, ops: list[tuple[bool, int]]
) -> None:
    live = {"n0"}
    table = initial(live, n_buckets)
    for join, which in ops:
        name = f"n{which}"
        if join and name not in live:
            new = plan_join(table, name)
            live.add(name)
            moved = moves(table, new)
            assert all(to == name for _, to in moved.values())
            assert len(moved) == n_buckets // len(live)
        elif not join and name in live and name not in table.nodes:
            with pytest.raises(ClusterError):  # more nodes than buckets: it owns none
                plan_leave(table, name)
            live.discard(name)
            continue
        elif not join and name in live and len(live) > 1:
            new = plan_leave(table, name, idle=live - set(table.nodes))
            live.discard(name)
            moved = moves(table, new)
            assert all(frm == name for frm, _ in moved.values())
            assert set(moved) == set(table.buckets_of(name))
        else:
            continue
        assert new.version == table.version + 1
        table = new
        # Nodes with zero buckets (more nodes than buckets) are live but absent.
        if len(live) <= n_buckets:
            _check_invariants(table, live)
        else:
            assert set(table.owners) <= live
            assert max(table.shares().values()) == 1


@settings(max_examples=30, deadline=None)
@given(
    before=st.sets(st.sampled_from("abcdefgh"), min_size=1),
    after=st.sets(st.sampled_from("abcdefgh"), min_size=1),
)
def test_membership_plan_is_balanced(before: set[str], after: set[str]) -> None:
    table = initial(before, 64)
    new = plan_membership(table, after)
    _check_invariants(new, after)


def test_bucket_key_maps_to_its_bucket_for_every_bucket() -> None:
    from webgather.cluster.mapping import bucket_key

    for n_buckets in (1, 7, 4096):
        keys = [bucket_key(b, n_buckets) for b in range(n_buckets)]
        assert [bucket_of(k, n_buckets) for k in keys] == list(range(n_buckets))
        assert all(k.startswith("#") for k in keys)  # never a host key
    with pytest.raises(ClusterError):
        bucket_key(7, 7)
