"""Add the daemon's CA to the user's trust store — macOS login keychain, Windows CurrentUser\\Root,
Linux the user's NSS database (Chrome, Firefox, Electron) — without admin rights, idempotently.

Where it cannot (no ``certutil``, a keychain prompt timed out) it returns the exact command to run.
Trust is never removed by an uninstall.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

from velesmem.clients.host import Host

CA_NAME = "VelesDB Memory Local CA"
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class TrustResult:
    """``action``: added, already, manual (see ``command``) or failed; for a removal, removed or
    absent (it was not there)."""

    action: str
    store: str
    detail: str = ""
    command: str = ""


def fingerprint(ca_cert: str, algorithm: str = "sha1") -> str:
    """Upper-case hex digest of the certificate's DER bytes (sha1 = Windows' thumbprint)."""
    der = ssl.PEM_cert_to_DER_cert(Path(ca_cert).read_text("ascii"))
    return hashlib.new(algorithm, der).hexdigest().upper()


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def _q(path: str) -> str:
    return f'"{path}"' if " " in path else path


def manual_command(host: Host, ca_cert: str) -> str:
    """The command a user runs by hand to trust the CA on this OS."""
    if host.is_macos:
        keychain = str(host.home_path("Library", "Keychains", "login.keychain-db"))
        return f"security add-trusted-cert -r trustRoot -p ssl -k {_q(keychain)} {_q(ca_cert)}"
    if host.is_windows:
        return f'certutil -addstore -user Root "{ca_cert}"'
    nssdb = str(host.home_path(".pki", "nssdb"))
    return (f"certutil -d sql:{_q(nssdb)} -A -t C,, -n \"{CA_NAME}\" -i {_q(ca_cert)}"
            f"   # needs libnss3-tools (Debian/Ubuntu) or nss-tools (Fedora)")


def system_store_command(ca_cert: str) -> str:
    """Optional, needs root: make OpenSSL-based tools (curl, Python) trust the CA system-wide."""
    return "sudo velesdb-memory trust-ca --system"  # velesmem.service.system_trust does it


def trust_ca(host: Host, ca_cert: str, timeout: float = DEFAULT_TIMEOUT_S) -> TrustResult:
    """Trust ``ca_cert`` for TLS in the current user's store; idempotent."""
    if host.is_macos:
        return _macos(host, ca_cert, timeout)
    if host.is_windows:
        return _windows(host, ca_cert, timeout)
    return _nss(host, ca_cert, timeout)


def _macos(host: Host, ca_cert: str, timeout: float) -> TrustResult:
    store = "macOS login keychain"
    check = _run(["security", "verify-cert", "-c", ca_cert, "-p", "ssl"], timeout)
    if check is not None and check.returncode == 0:
        return TrustResult("already", store)
    keychain = str(host.home_path("Library", "Keychains", "login.keychain-db"))
    done = _run(["security", "add-trusted-cert", "-r", "trustRoot", "-p", "ssl", "-k", keychain, ca_cert],
                timeout)
    if done is None:
        return TrustResult("manual", store, f"no answer to the keychain prompt within {timeout:.0f} s",
                           manual_command(host, ca_cert))
    if done.returncode != 0:
        return TrustResult("manual", store, done.stderr.strip()[-300:], manual_command(host, ca_cert))
    return TrustResult("added", store)


def _windows(host: Host, ca_cert: str, timeout: float) -> TrustResult:
    store = "Windows CurrentUser\\Root"
    thumb = fingerprint(ca_cert)
    check = _run(["certutil", "-user", "-verifystore", "Root", thumb], timeout)
    if check is not None and check.returncode == 0:
        return TrustResult("already", store, f"thumbprint {thumb}")
    done = _run(["certutil", "-user", "-addstore", "Root", ca_cert], timeout)
    if done is None or done.returncode != 0:
        why = "no answer within the timeout" if done is None else done.stdout.strip()[-300:]
        return TrustResult("manual", store, why, manual_command(host, ca_cert))
    return TrustResult("added", store, f"thumbprint {thumb}")


def _nss(host: Host, ca_cert: str, timeout: float) -> TrustResult:
    nssdb = host.local(host.home_path(".pki", "nssdb"))
    store = f"NSS database {nssdb}"
    certutil = shutil.which("certutil", path=host.env.get("PATH", os.defpath))
    if certutil is None:
        return TrustResult("manual", store, "certutil (libnss3-tools) is not installed",
                           manual_command(host, ca_cert))
    db = f"sql:{nssdb}"
    nick = f"{CA_NAME} ({fingerprint(ca_cert, 'sha256')[:16]})"
    if not (nssdb / "cert9.db").exists():
        nssdb.mkdir(parents=True, exist_ok=True, mode=0o700)
        made = _run([certutil, "-N", "-d", db, "--empty-password"], timeout)
        if made is None or made.returncode != 0:
            return TrustResult("failed", store, (made.stderr.strip() if made else "timed out")[-300:],
                               manual_command(host, ca_cert))
    listed = _run([certutil, "-L", "-d", db, "-n", nick], timeout)
    if listed is not None and listed.returncode == 0:
        return TrustResult("already", store, nick)
    added = _run([certutil, "-A", "-d", db, "-t", "C,,", "-n", nick, "-i", ca_cert], timeout)
    if added is None or added.returncode != 0:
        return TrustResult("failed", store, (added.stderr.strip() if added else "timed out")[-300:],
                           manual_command(host, ca_cert))
    return TrustResult("added", store, nick)


def os_store_trusts(host: str, port: int) -> bool:
    """Whether this Python's default (OS) trust store verifies the daemon, with no CA file given."""
    from velesmem.service.health import check_health

    return check_health(host, port, None, context=ssl.create_default_context()).ok


def is_trusted(host: Host, ca_cert: str, timeout: float = 15.0) -> tuple[bool | None, str]:
    """(trusted?, store name) — None when the store's tool is missing and we cannot tell."""
    if host.is_macos:
        done = _run(["security", "verify-cert", "-c", ca_cert, "-p", "ssl"], timeout)
        return (None if done is None else done.returncode == 0), "macOS login keychain"
    if host.is_windows:
        done = _run(["certutil", "-user", "-verifystore", "Root", fingerprint(ca_cert)], timeout)
        return (None if done is None else done.returncode == 0), "Windows CurrentUser\\Root store"
    nssdb = host.local(host.home_path(".pki", "nssdb"))
    store = f"NSS database {nssdb} (Chrome, Electron apps)"
    certutil = shutil.which("certutil", path=host.env.get("PATH", os.defpath))
    if certutil is None or not (nssdb / "cert9.db").exists():
        return (None if certutil is None else False), store
    nick = f"{CA_NAME} ({fingerprint(ca_cert, 'sha256')[:16]})"
    done = _run([certutil, "-L", "-d", f"sql:{nssdb}", "-n", nick], timeout)
    return (None if done is None else done.returncode == 0), store


# --- which variable each client runtime reads --------------------------------------------------

@dataclass(frozen=True)
class RuntimeTrust:
    """How one client runtime can be told to trust a CA: the variables it reads (each names a
    PEM file), and whether it reads the OS store (then ``trust-ca --system`` is enough)."""

    runtime: str
    clients: tuple[str, ...]
    variables: tuple[str, ...]
    reads_system_store: bool
    note: str = ""

    def hint(self, ca_cert: str) -> str:
        """One line: the runtime, its clients, and the variable(s) to set."""
        ways = " or ".join(f"{v}={_q(ca_cert)}" for v in self.variables)
        store = " (or trust-ca --system: it reads the OS store)" if self.reads_system_store else ""
        return (f"{self.runtime} ({', '.join(self.clients)}): {ways}{store}"
                f"{f'; {self.note}' if self.note else ''}")


# Measured with each CLI from npm: Bun reads NODE_EXTRA_CA_CERTS, SSL_CERT_FILE and the
# OpenSSL store; Node reads its bundled roots plus NODE_EXTRA_CA_CERTS only; Codex (Rust, rustls)
# reads the OS store, CODEX_CA_CERTIFICATE or SSL_CERT_FILE, not NODE_EXTRA_CA_CERTS.
RUNTIME_TRUST: dict[str, RuntimeTrust] = {
    "bun": RuntimeTrust("Bun", ("Claude Code", "opencode"), ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"),
                        True, "SSL_CERT_FILE replaces the default roots: prefer NODE_EXTRA_CA_CERTS"),
    "node": RuntimeTrust("Node", ("Gemini CLI", "Qwen Code", "mcp-remote"), ("NODE_EXTRA_CA_CERTS",),
                         False, "the OS store only with NODE_OPTIONS=--use-openssl-ca"),
    "rust": RuntimeTrust("Rust", ("Codex",), ("CODEX_CA_CERTIFICATE", "SSL_CERT_FILE"), True,
                         "it ignores NODE_EXTRA_CA_CERTS"),
}


def runtime_hints(ca_cert: str, system_trusted: bool = False) -> list[str]:
    """What each runtime still needs: every runtime's variables, or — once the OS store trusts
    the CA — only the runtimes that do not read it."""
    return [rt.hint(ca_cert) for rt in RUNTIME_TRUST.values()
            if not (system_trusted and rt.reads_system_store)]
