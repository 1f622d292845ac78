"""A tiny HTTPS origin on loopback with a self-signed certificate made in the test (``cryptography``).

``TlsOrigin(host_name, address, pages)`` serves ``path -> html`` over TLS/HTTP 1.1 (one request per
connection), records each request head it got, and writes its certificate to ``cert_path`` so a
client can trust exactly it (``SSL_CERT_FILE``, or ``verify_tls=False``).
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from pathlib import Path

import pytest

from tests.integration.loopback_server import LoopbackServer

x509 = pytest.importorskip("cryptography.x509", reason="cryptography makes the test's self-signed certificate")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def self_signed(directory: Path, host_name: str, address: str) -> tuple[Path, Path]:
    """(certificate, key) PEM files for ``host_name`` and ``address``, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host_name),
                                                    x509.IPAddress(ipaddress.ip_address(address))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "origin-cert.pem", directory / "origin-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class TlsOrigin(LoopbackServer):
    def __init__(self, directory: Path, host_name: str, address: str, pages: dict[str, str]) -> None:
        self.cert_path, key_path = self_signed(directory, host_name, address)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path, key_path)
        super().__init__(address, context)
        self.host_name, self.pages = host_name, pages
        self.heads: list[bytes] = []

    def url(self, path: str = "/") -> str:
        return f"https://{self.host_name}:{self.port}{path}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
        except (OSError, TimeoutError):  # TLS errors are OSErrors
            return
        self.heads.append(head)
        path = head.split(b" ", 2)[1].decode()
        body = self.pages.get(path)
        status = "200 OK" if body is not None else "404 Not Found"
        data = (body if body is not None else "not here").encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {len(data)}\r\n"
                     "Connection: close\r\n\r\n".encode() + data)
        await writer.drain()
