"""The one thing pyproject.toml cannot say: the optional C extensions (webgather.parse.native, webgather.store.pagerecords).

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
        Extension(  # the WARC writer's SHA-1 digests (webgather.store.pagerecords); needs OpenSSL's headers
            "webgather._warcdigest",
            sources=["src/webgather/_warcdigest.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11"],
            libraries=["crypto"],
        ),
    ]
)
