"""The daemon's local CA and its short-lived leaf certificate.

The CA (ECDSA P-256, CN "VelesDB Memory Local CA", 10 years) is created once in the TLS dir and
never regenerated: clients trust it once. A fresh 30-day leaf for localhost/127.0.0.1/::1, signed by
it and backdated one hour against clock skew, is issued at every daemon start, and again by the
running daemon before it expires (``renew_leaf``; see ``renewal.py``).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from velesmem import limits
from velesmem.daemon.address import CA_CERT_FILE
from velesmem.daemon.upstream import client_ssl_context as client_ssl_context  # re-exported
from velesmem.errors import Internal

CA_COMMON_NAME = "VelesDB Memory Local CA"
LEAF_COMMON_NAME = "localhost"
LEAF_DNS_NAMES = ("localhost",)
LEAF_IP_ADDRESSES = ("127.0.0.1", "::1")
CA_KEY_FILE = "ca-key.pem"
LEAF_CERT_FILE = "leaf-cert.pem"
LEAF_KEY_FILE = "leaf-key.pem"
DIR_MODE = 0o700
KEY_MODE = 0o600
CERT_MODE = 0o644
LEAF_BACKDATE = dt.timedelta(hours=1)
LEAF_LIFETIME = dt.timedelta(days=limits.LEAF_CERT_DAYS)


@dataclass(frozen=True)
class TlsFiles:
    """Where the CA and the current leaf live on disk."""

    ca_cert: Path
    ca_key: Path
    leaf_cert: Path
    leaf_key: Path


def tls_files(tls_dir: Path) -> TlsFiles:
    """The four file paths inside ``tls_dir``."""
    return TlsFiles(
        ca_cert=tls_dir / CA_CERT_FILE,
        ca_key=tls_dir / CA_KEY_FILE,
        leaf_cert=tls_dir / LEAF_CERT_FILE,
        leaf_key=tls_dir / LEAF_KEY_FILE,
    )


def prepare_tls(
    tls_dir: Path, *, names: Sequence[str] = (), now: dt.datetime | None = None,
    leaf_lifetime: dt.timedelta = LEAF_LIFETIME,
) -> TlsFiles:
    """Ensure the CA exists (creating it only the first time) and issue a fresh leaf for the
    loopback names plus ``names`` (host names or IP literals other machines use)."""
    now = now or dt.datetime.now(dt.UTC)
    files = tls_files(tls_dir)
    _ensure_dir(tls_dir)
    ca_cert, ca_key = _load_or_create_ca(files, now)
    _write_leaf(files, ca_cert, ca_key, now, leaf_lifetime, names)
    return files


def renew_leaf(
    files: TlsFiles, *, now: dt.datetime | None = None, leaf_lifetime: dt.timedelta = LEAF_LIFETIME
) -> dt.datetime:
    """Issue a fresh leaf signed by the existing CA (never creating a CA), for the names the
    current leaf carries; return when it expires."""
    now = now or dt.datetime.now(dt.UTC)
    ca_cert, ca_key = _load_ca(files)
    return _write_leaf(files, ca_cert, ca_key, now, leaf_lifetime, leaf_names(files))


def leaf_names(files: TlsFiles) -> list[str]:
    """The names and IP addresses the leaf on disk carries beyond the loopback ones."""
    try:
        cert = x509.load_pem_x509_certificate(files.leaf_cert.read_bytes())
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, x509.ExtensionNotFound) as exc:
        raise Internal(f"cannot read the TLS leaf {files.leaf_cert}: {exc}") from None
    names = [*sans.get_values_for_type(x509.DNSName),
             *(str(a) for a in sans.get_values_for_type(x509.IPAddress))]
    return [n for n in names if n not in LEAF_DNS_NAMES and n not in LEAF_IP_ADDRESSES]


def leaf_expiry(files: TlsFiles) -> dt.datetime:
    """When the leaf on disk stops being valid (UTC)."""
    try:
        cert = x509.load_pem_x509_certificate(files.leaf_cert.read_bytes())
    except (OSError, ValueError) as exc:
        raise Internal(f"cannot read the TLS leaf {files.leaf_cert}: {exc}") from None
    return cert.not_valid_after_utc


def server_ssl_context(files: TlsFiles) -> ssl.SSLContext:
    """The daemon's TLS context, serving the current leaf. ``load_cert_chain`` on this same live
    context swaps the leaf: new handshakes get the new one, open connections keep theirs."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(files.leaf_cert, files.leaf_key)
    return ctx


def _ensure_dir(tls_dir: Path) -> None:
    try:
        tls_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(tls_dir, DIR_MODE)
    except OSError as exc:
        raise Internal(f"cannot create the TLS directory {tls_dir}: {exc.strerror}") from None


def _load_or_create_ca(files: TlsFiles, now: dt.datetime) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    have_cert, have_key = files.ca_cert.exists(), files.ca_key.exists()
    if have_cert and have_key:
        return _load_ca(files)
    if have_cert or have_key:
        # Half a CA: regenerating would silently invalidate the trust a user already granted.
        missing = files.ca_key if have_cert else files.ca_cert
        raise Internal(
            f"the local CA in {files.ca_cert.parent} is incomplete ({missing.name} is missing); "
            "restore it, or remove the directory to create a new CA (clients must then trust it again)"
        )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _issue_ca(key, now)
    _write(files.ca_key, _key_pem(key), KEY_MODE)
    _write(files.ca_cert, cert.public_bytes(serialization.Encoding.PEM), CERT_MODE)
    return cert, key


def _load_ca(files: TlsFiles) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    try:
        cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
        key = serialization.load_pem_private_key(files.ca_key.read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise Internal(f"cannot read the local CA in {files.ca_cert.parent}: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise Internal(f"{files.ca_key} is not an ECDSA key")
    return cert, key


def _issue_ca(key: ec.EllipticCurvePrivateKey, now: dt.datetime) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - LEAF_BACKDATE)
        .not_valid_after(now + dt.timedelta(days=365 * limits.CA_CERT_YEARS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )


def _write_leaf(
    files: TlsFiles,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
    lifetime: dt.timedelta,
    names: Sequence[str],
) -> dt.datetime:
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf_cert = _issue_leaf(ca_cert, ca_key, leaf_key, now, lifetime, names)
    # Key first, then cert: each replace is atomic, and a reader loads both only after this returns.
    _write(files.leaf_key, _key_pem(leaf_key), KEY_MODE)
    _write(files.leaf_cert, leaf_cert.public_bytes(serialization.Encoding.PEM), CERT_MODE)
    return leaf_cert.not_valid_after_utc


def _issue_leaf(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    leaf_key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
    lifetime: dt.timedelta,
    names: Sequence[str],
) -> x509.Certificate:
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in LEAF_DNS_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in LEAF_IP_ADDRESSES]
    for name in dict.fromkeys(names):
        if name in LEAF_DNS_NAMES or name in LEAF_IP_ADDRESSES:
            continue
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LEAF_COMMON_NAME)]))
        .issuer_name(ca_cert.subject)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - LEAF_BACKDATE)
        .not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(leaf_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write atomically with ``mode`` set before any byte lands (keys are never world-readable)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise Internal(f"cannot write {path}: {exc.strerror}") from None
