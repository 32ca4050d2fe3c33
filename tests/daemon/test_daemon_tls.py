"""The local CA and leaf: algorithms, lifetimes, names, file modes; CA kept, leaf re-issued at start
and renewed in the live server context before it expires."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from velesmem.daemon.renewal import LeafRenewer
from velesmem.daemon.tls import (
    CA_COMMON_NAME,
    client_ssl_context,
    prepare_tls,
    renew_leaf,
    server_ssl_context,
    tls_files,
)
from velesmem.errors import Internal

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_start_creates_ca_and_leaf_with_private_modes(tmp_path: Path) -> None:
    tls_dir = tmp_path / "tls"
    files = prepare_tls(tls_dir, now=NOW)
    assert _mode(tls_dir) == 0o700
    assert _mode(files.ca_key) == 0o600
    assert _mode(files.leaf_key) == 0o600
    assert _mode(files.ca_cert) == 0o644
    assert _mode(files.leaf_cert) == 0o644
    assert sorted(p.name for p in tls_dir.iterdir()) == [
        "ca-cert.pem", "ca-key.pem", "leaf-cert.pem", "leaf-key.pem"]


def test_ca_is_p256_ten_year_root_for_signing_certificates(tmp_path: Path) -> None:
    ca = _cert(prepare_tls(tmp_path / "tls", now=NOW).ca_cert)
    assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == CA_COMMON_NAME
    assert ca.issuer == ca.subject
    key = ca.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1)
    basic = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and basic.value.ca
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign
    years = (ca.not_valid_after_utc - ca.not_valid_before_utc).days / 365
    assert 9.9 < years < 10.1


def test_leaf_names_loopback_lasts_30_days_and_is_backdated_an_hour(tmp_path: Path) -> None:
    files = prepare_tls(tmp_path / "tls", now=NOW)
    leaf, ca = _cert(files.leaf_cert), _cert(files.ca_cert)
    assert leaf.issuer == ca.subject
    assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "localhost"
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert set(sans.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert leaf.not_valid_before_utc == NOW - dt.timedelta(hours=1)
    assert leaf.not_valid_after_utc == NOW + dt.timedelta(days=30)
    ca.verify_directly_issued_by(ca)
    leaf.verify_directly_issued_by(ca)


def test_leaf_also_names_what_other_machines_use_and_renewal_keeps_it(tmp_path: Path) -> None:
    files = prepare_tls(tmp_path / "tls", names=["192.0.2.7", "dev.example", "localhost", "::1"],
                        now=NOW)

    def names() -> tuple[list[str], set[ipaddress.IPv4Address | ipaddress.IPv6Address]]:
        sans = _cert(files.leaf_cert).extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value
        return sans.get_values_for_type(x509.DNSName), set(sans.get_values_for_type(x509.IPAddress))

    loopback = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    want = (["localhost", "dev.example"], loopback | {ipaddress.ip_address("192.0.2.7")})
    assert names() == want
    renew_leaf(files, now=NOW + dt.timedelta(days=25))
    assert names() == want


def test_restart_keeps_the_ca_and_reissues_the_leaf(tmp_path: Path) -> None:
    tls_dir = tmp_path / "tls"
    first = prepare_tls(tls_dir, now=NOW)
    ca_key, ca_cert, leaf_cert = first.ca_key.read_bytes(), first.ca_cert.read_bytes(), first.leaf_cert.read_bytes()
    later = NOW + dt.timedelta(days=40)
    second = prepare_tls(tls_dir, now=later)
    assert second.ca_key.read_bytes() == ca_key
    assert second.ca_cert.read_bytes() == ca_cert
    assert second.leaf_cert.read_bytes() != leaf_cert
    assert _cert(second.leaf_cert).not_valid_after_utc == later + dt.timedelta(days=30)
    _cert(second.leaf_cert).verify_directly_issued_by(_cert(second.ca_cert))


def test_half_a_ca_is_refused_rather_than_silently_replaced(tmp_path: Path) -> None:
    files = prepare_tls(tmp_path / "tls", now=NOW)
    files.ca_key.unlink()
    before = files.ca_cert.read_bytes()
    with pytest.raises(Internal, match="incomplete"):
        prepare_tls(tmp_path / "tls", now=NOW)
    assert files.ca_cert.read_bytes() == before


def test_loose_directory_mode_is_tightened(tmp_path: Path) -> None:
    tls_dir = tmp_path / "tls"
    tls_dir.mkdir(mode=0o755)
    tls_dir.chmod(0o755)
    prepare_tls(tls_dir, now=NOW)
    assert _mode(tls_dir) == 0o700


def test_strict_client_context_accepts_our_leaf_and_rejects_a_foreign_ca(tmp_path: Path) -> None:
    """A real TLS handshake over a socket pair: our CA verifies the leaf; another CA does not."""
    files = prepare_tls(tmp_path / "ours", now=dt.datetime.now(dt.UTC))
    other = prepare_tls(tmp_path / "other", now=dt.datetime.now(dt.UTC))
    assert _handshake(files, client_ssl_context(files.ca_cert)) is None
    error = _handshake(files, client_ssl_context(other.ca_cert))
    assert isinstance(error, ssl.SSLCertVerificationError)
    assert tls_files(tmp_path / "ours") == files


def _handshake(files, client_ctx: ssl.SSLContext) -> Exception | None:
    import socket

    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(files.leaf_cert, files.leaf_key)
    a, b = socket.socketpair()
    server_error: list[Exception] = []

    def serve() -> None:
        try:
            with server_ctx.wrap_socket(a, server_side=True) as s:
                s.recv(1)
        except (ssl.SSLError, OSError) as exc:
            server_error.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client_ctx.wrap_socket(b, server_hostname="localhost") as c:
            c.sendall(b"x")
        return None
    except ssl.SSLError as exc:
        return exc
    finally:
        b.close()
        thread.join(5)
        a.close()


def _serial(tls: ssl.SSLSocket) -> int:
    der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


class _EchoServer:
    """TLS over a socket pair, served from ``ctx`` in a thread: echoes until the client closes."""

    def __init__(self, ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> None:
        import socket

        server_sock, client_sock = socket.socketpair()
        self.thread = threading.Thread(target=self._serve, args=(ctx, server_sock))
        self.thread.start()
        self.client = client_ctx.wrap_socket(client_sock, server_hostname="localhost")

    @staticmethod
    def _serve(ctx: ssl.SSLContext, sock) -> None:
        with ctx.wrap_socket(sock, server_side=True) as tls:
            while data := tls.recv(1024):
                tls.sendall(data)

    def echo(self, data: bytes) -> bytes:
        self.client.sendall(data)
        return self.client.recv(1024)

    def close(self) -> None:
        self.client.close()
        self.thread.join(5)


def test_a_chain_reloaded_into_the_live_context_reaches_new_handshakes_only(tmp_path: Path) -> None:
    """What renewal relies on: ``load_cert_chain`` on the context the server already uses. A
    connection made before keeps its leaf and keeps working; the next handshake gets the new one."""
    files = prepare_tls(tmp_path / "tls")
    server_ctx = server_ssl_context(files)
    client_ctx = client_ssl_context(files.ca_cert)
    before = _EchoServer(server_ctx, client_ctx)
    try:
        old_serial = _serial(before.client)
        renew_leaf(files)
        server_ctx.load_cert_chain(files.leaf_cert, files.leaf_key)
        after = _EchoServer(server_ctx, client_ctx)
        try:
            assert _serial(after.client) == _cert(files.leaf_cert).serial_number != old_serial
            assert after.echo(b"new") == b"new"
        finally:
            after.close()
        assert before.echo(b"old") == b"old" and _serial(before.client) == old_serial
    finally:
        before.close()


def test_renewer_renews_once_less_than_a_third_of_the_lifetime_remains(tmp_path: Path) -> None:
    files = prepare_tls(tmp_path / "tls", now=NOW)
    ca_before = files.ca_cert.read_bytes(), files.ca_key.read_bytes()
    clock = [NOW]
    renewer = LeafRenewer(files, server_ssl_context(files), 30 * 24 * 3600.0, clock=lambda: clock[0])
    assert renewer.check_interval_s == 3600.0

    clock[0] = NOW + dt.timedelta(days=19, hours=23)  # just over ten days (a third) remain
    assert not renewer.renew_if_due()
    clock[0] = NOW + dt.timedelta(days=20, seconds=1)
    assert renewer.renew_if_due()
    assert _cert(files.leaf_cert).not_valid_after_utc == clock[0] + dt.timedelta(days=30)
    assert renewer.expires == clock[0] + dt.timedelta(days=30)
    assert (files.ca_cert.read_bytes(), files.ca_key.read_bytes()) == ca_before
    _cert(files.leaf_cert).verify_directly_issued_by(_cert(files.ca_cert))
    assert not renewer.renew_if_due()  # fresh again
