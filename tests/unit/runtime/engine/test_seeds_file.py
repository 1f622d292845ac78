"""seeds.txt on a full disk: a resume with the same seeds writes nothing; a new seed is WriteFailed."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from webgather.errors import WriteFailed
from webgather.store.outdir import merge_seeds


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Path, *_args: object, **_kwargs: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", refuse)


def test_a_resume_on_a_full_disk_reads_its_seeds_without_writing(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    assert merge_seeds(tmp_path, ["http://a.test/"]) == ["http://a.test/"]
    _full_disk(monkeypatch)
    assert merge_seeds(tmp_path, ["http://a.test/"]) == ["http://a.test/"]
    assert merge_seeds(tmp_path, []) == ["http://a.test/"]
    with pytest.raises(WriteFailed, match=r"disk full: cannot write .*seeds.txt: No space left on device \(ENOSPC\)"):
        merge_seeds(tmp_path, ["http://b.test/"])
    assert (tmp_path / "seeds.txt").read_text() == "http://a.test/\n"
    assert not (tmp_path / "seeds.tmp").exists()
