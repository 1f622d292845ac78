"""The one thing pyproject.toml cannot say: the optional C extensions of webgather.parse.native.

``optional=True``: where it does not compile (no C compiler, no Python headers) the
install still succeeds, pure Python, and webgather.parse.native says so.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "webgather._urlcore",
            sources=["src/webgather/_urlcore.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11"],
        ),
        Extension(
            "webgather._pagescan",
            sources=["src/webgather/_pagescan.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11"],
            libraries=["dl"],
        ),
    ]
)
