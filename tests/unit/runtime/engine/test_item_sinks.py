"""Item stores (runtime.engine.item_sinks): Parquet part files read back with pyarrow, what a kill -9 loses,
the column rule for items of different shapes, the cluster's file names, and failures as WriteFailed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from webgather.config import CrawlConfig, HooksConfig
from webgather.errors import ConfigError, WriteFailed
from webgather.runtime.engine.item_columns import Columns
from webgather.runtime.engine.item_sinks import JsonLinesItems, ObjectItems, ParquetItems, check_items_format, items_path, open_items

pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the test extra) is not installed")


def _items(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"page_url": f"http://a.test/{i}", "n": i, "title": f"t{i}"} for i in range(start, start + n)]


def _put_each(store: Any, items: list[dict[str, Any]]) -> None:
    for item in items:
        store.put([item], [json.dumps(item).encode() + b"\n"])


def _read(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return sorted(rows, key=lambda r: r["n"])


def _parts(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def test_parts_of_at_most_a_batch_each_and_the_rest_at_close(tmp_path: Path) -> None:
    path = tmp_path / "items.parquet"
    store = ParquetItems(path, batch=5, flush_s=3600)
    _put_each(store, _items(13))
    assert _parts(path) == ["part-00000.parquet", "part-00001.parquet"], "two full batches written, 3 wait"
    store.close()
    assert _parts(path) == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert [pq.ParquetFile(path / p).metadata.num_row_groups for p in _parts(path)] == [1, 1, 1]
    assert _read(path) == [{**item, "_extra": None} for item in _items(13)]


def test_a_resumed_store_continues_the_numbering_and_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "items.parquet"
    first = ParquetItems(path, batch=100, flush_s=3600)
    _put_each(first, _items(2))
    first.close()
    (path / ".part-00001.parquet.tmp").write_bytes(b"PAR1 torn")  # a kill -9 while writing a part
    again = ParquetItems(path, batch=100, flush_s=3600)
    _put_each(again, [{"page_url": "http://a.test/9", "n": 9, "title": 9, "new": True}])
    again.close()
    assert _parts(path) == ["part-00000.parquet", "part-00001.parquet"], "the torn temporary is gone"
    rows = _read(path)
    assert rows[-1] == {"page_url": "http://a.test/9", "n": 9, "title": None, "_extra": '{"new":true,"title":9}'}


def test_items_of_different_shapes_lose_nothing(tmp_path: Path) -> None:
    items = [{"page_url": "u1", "a": 1, "b": "x", "tags": ["p", "q"], "mixed": 1, "none": None},
             {"page_url": "u2", "a": 2.5, "c": {"k": 1}, "mixed": "one", "_extra": 7}]
    assert Columns.infer(items).kinds == ("string", "float", "string", "json", "json", "json", "json")
    store = ParquetItems(tmp_path / "x.parquet", batch=2, flush_s=3600)  # the first two make the columns
    _put_each(store, items)
    store.put([{"page_url": "u3", "a": "not a number", "zzz": 1}], [b"{}\n"])
    store.close()
    table = pq.read_table(tmp_path / "x.parquet")
    assert table.column_names == ["page_url", "a", "b", "tags", "mixed", "none", "c", "_extra"]
    assert str(table.schema.field("a").type) == "double"
    rows = table.to_pylist()
    assert rows[0] == {"page_url": "u1", "a": 1.0, "b": "x", "tags": '["p","q"]', "mixed": "1", "none": None,
                       "c": None, "_extra": None}
    assert rows[1]["c"] == '{"k":1}' and rows[1]["mixed"] == '"one"' and json.loads(rows[1]["_extra"]) == {"_extra": 7}
    assert rows[2]["a"] is None and json.loads(rows[2]["_extra"]) == {"a": "not a number", "zzz": 1}


KILLED = """
import json, os, signal, sys
from pathlib import Path
from webgather.runtime.engine.item_sinks import ParquetItems
store = ParquetItems(Path(sys.argv[1]), batch=5, flush_s=3600)
for i in range(13):
    item = {"page_url": f"http://a.test/{i}", "n": i, "title": f"t{i}"}
    store.put([item], [json.dumps(item).encode() + b"\\n"])
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_kill_9_loses_exactly_the_items_not_yet_written(tmp_path: Path) -> None:
    path = tmp_path / "items.parquet"
    proc = subprocess.run([sys.executable, "-c", KILLED, str(path)], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    assert _read(path) == [{**item, "_extra": None} for item in _items(10)], "13 put, 10 written: the 3 waiting are lost"


async def test_a_quiet_crawl_writes_its_waiting_items_after_flush_s(tmp_path: Path) -> None:
    path = tmp_path / "items.parquet"
    store = ParquetItems(path, batch=1000, flush_s=0.05)
    _put_each(store, _items(2))
    assert _parts(path) == []
    await asyncio.sleep(0.5)
    assert _parts(path) == ["part-00000.parquet"] and len(_read(path)) == 2
    store.close()
    assert _parts(path) == ["part-00000.parquet"], "nothing left to write"


def test_failed_writes_are_write_failed(tmp_path: Path) -> None:
    (tmp_path / "file.parquet").write_text("not a directory")
    with pytest.raises(WriteFailed, match="cannot open Parquet items directory"):
        ParquetItems(tmp_path / "file.parquet", batch=5, flush_s=1)

    class Broken:
        def write(self, item: dict[str, Any]) -> None:
            raise RuntimeError("database is down")

        def close(self) -> None:
            pass

    with pytest.raises(WriteFailed, match=r"item sink <Broken>.write raised RuntimeError: database is down"):
        ObjectItems(Broken()).put([{"a": 1}], [b'{"a":1}\n'])


def test_parquet_without_pyarrow_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import now raises ImportError
    with pytest.raises(ConfigError, match=r"Parquet needs pyarrow, which is not installed") as found:
        check_items_format("out.parquet")
    assert "\n" not in str(found.value)
    check_items_format("out.jsonl")


def test_where_each_node_writes(tmp_path: Path) -> None:
    node = tmp_path / "out" / "nodes" / "w1"
    assert items_path(None, node, "w1", one_node=False) == node / "items.jsonl"
    assert items_path("/data/items.parquet", node, "w1", one_node=False) == node / "items-w1.parquet"
    assert items_path("some/where.jsonl", tmp_path, "n0", one_node=True) == Path("some/where.jsonl")
    config = CrawlConfig(out_dir=str(tmp_path / "out"), hooks=HooksConfig(items=str(tmp_path / "x.jsonl")))
    one = open_items(config, tmp_path / "out", "n0", None)
    assert isinstance(one, JsonLinesItems) and one.path == tmp_path / "x.jsonl"
    cluster = open_items(config, node, "w1", None)
    assert isinstance(cluster, JsonLinesItems) and cluster.path == node / "x-w1.jsonl"
