"""The serve flags: --help lists every flag and setting; flags win over the environment; the bind
policy; --http-port overrides just the port."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from velesmem.cli import build_parser
from velesmem.cli._serve import add_serve_arguments, settings_from_args
from velesmem.config import SETTINGS, Settings
from velesmem.daemon.address import check_bind_allowed, daemon_address, is_loopback
from velesmem.errors import Internal

SERVE_FLAGS = ("--http", "--http-port", "--http-insecure", "--version", "--help")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    add_serve_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.integration
def test_help_lists_every_serve_flag_and_every_environment_setting() -> None:
    done = subprocess.run([sys.executable, "-m", "velesmem", "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    for flag in SERVE_FLAGS:
        assert flag in done.stdout, flag
    for setting in SETTINGS:
        assert setting.env_name in done.stdout, setting.env_name


@pytest.mark.integration
def test_version_flag_prints_the_version() -> None:
    from velesmem import __version__

    done = subprocess.run([sys.executable, "-m", "velesmem", "--version"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and __version__ in done.stdout


def test_flags_override_the_environment() -> None:
    env = Settings.from_env({"VELESDB_MEMORY_HTTP_BIND": "localhost:9000"})
    settings = settings_from_args(_parse(["--http", "--http-port", "9443", "--http-insecure"]), env)
    assert settings.http and settings.http_insecure
    assert settings.http_bind == "localhost:9443"  # --http-port changes only the port
    assert settings_from_args(_parse([]), env) == env


def test_http_port_out_of_range_is_a_usage_error() -> None:
    with pytest.raises(SystemExit):
        _parse(["--http-port", "70000"])
    with pytest.raises(SystemExit):
        _parse(["--http-port", "-1"])


def test_http_port_zero_asks_for_a_free_port() -> None:
    settings = settings_from_args(_parse(["--http", "--http-port", "0"]), Settings())
    address = check_bind_allowed(settings)
    assert address.port == 0
    assert address.bound_to(43210).url() == "https://127.0.0.1:43210/mcp"
    assert address.bound_to(0) is address


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.2", "example.com", "10.0.0.1"])
def test_non_loopback_hosts_are_refused_without_allow_remote(host: str) -> None:
    bind = f"[{host}]:18090" if ":" in host else f"{host}:18090"
    with pytest.raises(Internal, match="VELESDB_MEMORY_HTTP_ALLOW_REMOTE"):
        check_bind_allowed(Settings(http_bind=bind))
    assert check_bind_allowed(Settings(http_bind=bind, http_allow_remote=True)).port == 18090


def test_default_address_is_loopback_https_on_18090() -> None:
    address = daemon_address(Settings())
    assert address.url() == "https://127.0.0.1:18090/mcp"
    assert daemon_address(Settings(http_insecure=True)).url("/health") == "http://127.0.0.1:18090/health"
    assert daemon_address(Settings(http_bind="0.0.0.0:1")).connect_host == "127.0.0.1"
