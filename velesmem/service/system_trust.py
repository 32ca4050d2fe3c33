"""Add the daemon's CA to the operating system's trust store, and take it out again cleanly.

The OS store is what OpenSSL-based tools (curl, Python, Bun, Codex's rustls with native roots)
read with no CA variable. Linux: Debian's ``update-ca-certificates`` (our file in
/usr/local/share/ca-certificates) or p11-kit's ``trust anchor`` (Fedora, Arch); both need root.
macOS: the System keychain (``security add-trusted-cert -d``, an admin prompt or sudo). Windows:
the CurrentUser Root store (``certutil -user``, no admin). Removal on Debian runs ``--fresh``,
because a plain run leaves our two links dangling in /etc/ssl/certs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from velesmem.clients.host import Host
from velesmem.service.trust import CA_NAME, TrustResult, fingerprint

DEBIAN_ANCHOR_DIR = Path("/usr/local/share/ca-certificates")
DEBIAN_CERTS_DIR = Path("/etc/ssl/certs")
DEBIAN_FILE_NAME = "velesmem.crt"  # update-ca-certificates takes only *.crt files
MACOS_SYSTEM_KEYCHAIN = "/Library/Keychains/System.keychain"
DEFAULT_TIMEOUT_S = 120.0  # update-ca-certificates rehashes every certificate; a prompt waits


@dataclass(frozen=True)
class DebianStore:
    """Where Debian's update-ca-certificates takes local CAs from and writes its links."""

    anchor_dir: Path = DEBIAN_ANCHOR_DIR
    certs_dir: Path = DEBIAN_CERTS_DIR
    file_name: str = DEBIAN_FILE_NAME

    @property
    def anchor(self) -> Path:
        return self.anchor_dir / self.file_name

    @property
    def link(self) -> Path:
        """The link update-ca-certificates makes for our file (name.crt → name.pem)."""
        return self.certs_dir / (Path(self.file_name).stem + ".pem")

    def dangling_links(self) -> list[Path]:
        """Links in the certs directory whose target is gone (what a removal must not leave)."""
        if not self.certs_dir.is_dir():
            return []
        return sorted(p for p in self.certs_dir.iterdir() if p.is_symlink() and not p.exists())


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    except OSError as exc:  # the tool vanished, or is not executable
        return subprocess.CompletedProcess(argv, 127, "", str(exc))


def _why(done: subprocess.CompletedProcess[str] | None) -> str:
    if done is None:
        return "timed out"
    return " ".join((done.stderr or done.stdout).split())[-300:] or f"exit status {done.returncode}"


def _which(host: Host, name: str) -> str | None:
    path = host.env.get("PATH", os.defpath)
    return shutil.which(name, path=path) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")


def linux_tool(host: Host) -> str | None:
    """``update-ca-certificates`` (Debian, Ubuntu), ``trust`` (p11-kit: Fedora, Arch), or None."""
    if _which(host, "update-ca-certificates") and DEBIAN_ANCHOR_DIR.parent.is_dir():
        return "update-ca-certificates"
    if _which(host, "trust"):
        return "trust"
    return None


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def store_name(host: Host) -> str:
    if host.is_macos:
        return "macOS System keychain"
    if host.is_windows:
        return "Windows CurrentUser\\Root store"
    return "system CA store (OpenSSL)"


def command(host: Host, ca_cert: str, remove: bool = False) -> str:
    """The command a user runs by hand to do the same."""
    if host.is_macos:
        if remove:
            return f'sudo security delete-certificate -c "{CA_NAME}" {MACOS_SYSTEM_KEYCHAIN}'
        return f'sudo security add-trusted-cert -d -r trustRoot -k {MACOS_SYSTEM_KEYCHAIN} "{ca_cert}"'
    if host.is_windows:
        return (f'certutil -user -delstore Root "{CA_NAME}"' if remove
                else f'certutil -user -addstore Root "{ca_cert}"')
    if linux_tool(host) == "trust":
        return (f'sudo trust anchor --remove "{ca_cert}"' if remove
                else f'sudo trust anchor --store "{ca_cert}"')
    store = DebianStore()
    if remove:
        return f"sudo rm -f {store.anchor} && sudo update-ca-certificates --fresh"
    return f'sudo cp "{ca_cert}" {store.anchor} && sudo update-ca-certificates'


def add(host: Host, ca_cert: str, timeout: float = DEFAULT_TIMEOUT_S,
        debian: DebianStore | None = None) -> TrustResult:
    """Trust ``ca_cert`` system-wide; idempotent. ``failed`` (with the command to run) when not
    permitted — on Linux that needs root."""
    if host.is_macos:
        return _macos_add(host, ca_cert, timeout)
    if host.is_windows:
        return _windows_add(host, ca_cert, timeout)
    return _linux(host, ca_cert, timeout, debian or DebianStore(), remove=False)


def remove(host: Host, ca_cert: str, timeout: float = DEFAULT_TIMEOUT_S,
           debian: DebianStore | None = None) -> TrustResult:
    """Take the CA out of the system store (``removed``, or ``absent`` when it was not there)."""
    if host.is_macos:
        return _macos_remove(host, ca_cert, timeout)
    if host.is_windows:
        return _windows_remove(host, ca_cert, timeout)
    return _linux(host, ca_cert, timeout, debian or DebianStore(), remove=True)


# --- Linux ----------------------------------------------------------------------------------

def _linux(host: Host, ca_cert: str, timeout: float, debian: DebianStore,
           remove: bool) -> TrustResult:
    store = store_name(host)
    tool = linux_tool(host)
    manual = command(host, ca_cert, remove)
    if tool is None:
        return TrustResult("failed", store, "neither update-ca-certificates (Debian, Ubuntu: the "
                           "ca-certificates package) nor trust (p11-kit) is installed", manual)
    if not is_root():
        return TrustResult("failed", store, f"changing the {store} needs root: run "
                           "`sudo velesdb-memory trust-ca --system"
                           f"{' --remove' if remove else ''}`", manual)
    try:
        if tool == "trust":
            return _p11kit(host, ca_cert, timeout, remove, manual)
        return _debian_remove(debian, timeout, manual) if remove else \
            _debian_add(debian, ca_cert, timeout, manual)
    except PermissionError as exc:
        return TrustResult("failed", store, f"not permitted: {exc}", manual)


def _debian_add(debian: DebianStore, ca_cert: str, timeout: float, manual: str) -> TrustResult:
    store = f"system CA store ({debian.anchor}, update-ca-certificates)"
    pem = Path(ca_cert).read_bytes()
    if debian.anchor.is_file() and debian.anchor.read_bytes() == pem and debian.link.exists():
        return TrustResult("already", store, str(debian.link))
    debian.anchor_dir.mkdir(parents=True, exist_ok=True)
    staged = debian.anchor.with_name(debian.anchor.name + ".tmp")
    staged.write_bytes(pem)
    staged.chmod(0o644)
    os.replace(staged, debian.anchor)
    # --fresh when replacing an older CA of ours: its hash link would otherwise stay behind
    done = _run(["update-ca-certificates", *(["--fresh"] if debian.link.exists() else [])], timeout)
    if done is None or done.returncode != 0:
        return TrustResult("failed", store, f"update-ca-certificates: {_why(done)}", manual)
    if not debian.link.exists():
        return TrustResult("failed", store, f"update-ca-certificates made no {debian.link}", manual)
    return TrustResult("added", store, str(debian.link))


def _debian_remove(debian: DebianStore, timeout: float, manual: str) -> TrustResult:
    store = f"system CA store ({debian.anchor}, update-ca-certificates)"
    had = debian.anchor.exists() or debian.link.is_symlink()
    if not had:
        return TrustResult("absent", store)
    debian.anchor.unlink(missing_ok=True)
    done = _run(["update-ca-certificates", "--fresh"], timeout)  # plain: two links would dangle
    if done is None or done.returncode != 0:
        return TrustResult("failed", store, f"update-ca-certificates --fresh: {_why(done)}", manual)
    ours = (debian.file_name, debian.link.name)
    left = [p for p in debian.dangling_links() if p == debian.link or
            os.readlink(p).endswith(ours)]
    if left or debian.link.is_symlink():
        return TrustResult("failed", store, "links left in "
                           f"{debian.certs_dir}: {', '.join(map(str, left or [debian.link]))}", manual)
    return TrustResult("removed", store)


def _p11kit(host: Host, ca_cert: str, timeout: float, remove: bool, manual: str) -> TrustResult:
    store = "system CA store (p11-kit trust)"
    trust = _which(host, "trust") or "trust"
    listed = _run([trust, "list", "--filter=ca-anchors"], timeout)
    present = listed is not None and listed.returncode == 0 and CA_NAME in listed.stdout
    if remove:
        if not present:
            return TrustResult("absent", store)
        done = _run([trust, "anchor", "--remove", ca_cert], timeout)
        ok = "removed"
    else:
        if present:
            return TrustResult("already", store)
        done = _run([trust, "anchor", "--store", ca_cert], timeout)
        ok = "added"
    if done is None or done.returncode != 0:
        return TrustResult("failed", store, f"trust anchor: {_why(done)}", manual)
    return TrustResult(ok, store)


# --- macOS ----------------------------------------------------------------------------------

def _macos_add(host: Host, ca_cert: str, timeout: float) -> TrustResult:
    store = store_name(host)
    check = _run(["security", "verify-cert", "-c", ca_cert, "-p", "ssl"], timeout)
    if check is not None and check.returncode == 0:
        return TrustResult("already", store)
    done = _run(["security", "add-trusted-cert", "-d", "-r", "trustRoot", "-p", "ssl", "-k",
                 MACOS_SYSTEM_KEYCHAIN, ca_cert], timeout)
    if done is None or done.returncode != 0:
        return TrustResult("failed", store, f"needs an administrator: {_why(done)}",
                           command(host, ca_cert))
    return TrustResult("added", store)


def _macos_remove(host: Host, ca_cert: str, timeout: float) -> TrustResult:
    store = store_name(host)
    sha1 = fingerprint(ca_cert) if Path(ca_cert).is_file() else None
    found = _run(["security", "find-certificate", "-c", CA_NAME, MACOS_SYSTEM_KEYCHAIN], timeout)
    if found is None or found.returncode != 0:
        return TrustResult("absent", store)
    if Path(ca_cert).is_file():
        _run(["security", "remove-trusted-cert", "-d", ca_cert], timeout)
    argv = ["security", "delete-certificate", *(["-Z", sha1] if sha1 else ["-c", CA_NAME]),
            MACOS_SYSTEM_KEYCHAIN]
    done = _run(argv, timeout)
    if done is None or done.returncode != 0:
        return TrustResult("failed", store, f"needs an administrator: {_why(done)}",
                           command(host, ca_cert, remove=True))
    return TrustResult("removed", store)


# --- Windows --------------------------------------------------------------------------------

def _windows_add(host: Host, ca_cert: str, timeout: float) -> TrustResult:
    store = store_name(host)
    thumb = fingerprint(ca_cert)
    check = _run(["certutil", "-user", "-verifystore", "Root", thumb], timeout)
    if check is not None and check.returncode == 0:
        return TrustResult("already", store, f"thumbprint {thumb}")
    done = _run(["certutil", "-user", "-addstore", "Root", ca_cert], timeout)
    if done is None or done.returncode != 0:
        return TrustResult("failed", store, _why(done), command(host, ca_cert))
    return TrustResult("added", store, f"thumbprint {thumb}")


def _windows_remove(host: Host, ca_cert: str, timeout: float) -> TrustResult:
    store = store_name(host)
    cert_id = fingerprint(ca_cert) if Path(ca_cert).is_file() else CA_NAME
    check = _run(["certutil", "-user", "-verifystore", "Root", cert_id], timeout)
    if check is None or check.returncode != 0:
        return TrustResult("absent", store)
    done = _run(["certutil", "-user", "-delstore", "Root", cert_id], timeout)
    if done is None or done.returncode != 0:
        return TrustResult("failed", store, _why(done), command(host, ca_cert, remove=True))
    return TrustResult("removed", store)
