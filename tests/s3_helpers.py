"""An S3-compatible server on loopback for tests: moto's server mode, on a random port of 127.0.0.1."""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

S3_ENV = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
          "AWS_EC2_METADATA_DISABLED": "true"}
"""Credentials moto accepts, and no metadata-service lookup (nothing but loopback is ever asked)."""


@contextmanager
def moto_s3(bucket: str) -> Iterator[dict[str, str]]:
    """Start moto's S3 on 127.0.0.1 (random port), create ``bucket``; yields the environment that
    points boto3 at it (``AWS_ENDPOINT_URL`` and the credentials). Stops the server at exit."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        env = {**S3_ENV, "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
        # moto's state is per process, not per server: start from nothing (an earlier server's objects stay)
        urllib.request.urlopen(urllib.request.Request(f"{env['AWS_ENDPOINT_URL']}/moto-api/reset", method="POST"),
                               timeout=10).close()
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            boto3.session.Session().client("s3").create_bucket(Bucket=bucket)
            yield env
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        server.stop()
