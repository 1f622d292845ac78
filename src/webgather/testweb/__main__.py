"""``python -m webgather.testweb ACTION ...``: the same as ``webgather testweb ACTION ...``."""

from __future__ import annotations

import sys

from webgather.cli import main

if __name__ == "__main__":
    sys.exit(main(["testweb", *sys.argv[1:]]))
