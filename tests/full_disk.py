"""A disk that fills up, for tests: ``os.write`` patched per file name."""

from __future__ import annotations

import errno
import os

import pytest


class FullDisk:
    """``os.write`` as on a disk that fills up: a write to a file whose name ends with
    one of ``names`` puts half its bytes down, then the rest fails with ENOSPC."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
        self.names = names
        self.full = True
        self.failures = 0
        self._real = os.write
        monkeypatch.setattr(os, "write", self.write)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.full and os.readlink(f"/proc/self/fd/{fd}").endswith(self.names):
            if len(data) > 1 and self.failures % 2 == 0:
                self.failures += 1
                return self._real(fd, bytes(data[: len(data) // 2]))
            self.failures += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._real(fd, data)
