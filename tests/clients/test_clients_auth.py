"""``wire --token``: every client gets ``Authorization: Bearer`` in its documented place (fresh and
merged files, Claude Code's ``--header``, Codex's ``http_headers``, mcp-remote's ``--header`` with
the value in its env), a re-run changes nothing, a re-run without the token keeps it, files that
hold it are owner-only, uninstall removes it, and the token never appears in an outcome."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path

import pytest

from velesmem.cli import main
from velesmem.clients import Host, WireRequest, catalog, wire_clients
from velesmem.clients.jsonc import loads
from velesmem.clients.node import NodeTools
from velesmem.clients.wiring import desktop_entry

URL = "https://memory.team.example:18090/mcp"
TOKEN = "vmt_" + "S3cr3t-" * 6 + "x"
AUTH = f"Bearer {TOKEN}"
COMMAND = "/opt/velesmem/bin/velesdb-memory"
FILE_CLIENTS = (catalog.CURSOR, catalog.WINDSURF, catalog.DEVIN, catalog.CLINE, catalog.ZED,
                catalog.OPENCODE)


def host_for(home: Path, path: str | None = None) -> Host:
    return Host("Linux", str(home), {"HOME": str(home), "PATH": path or str(home / "empty-bin")})


def install_clients(home: Path) -> dict[str, Path]:
    host = host_for(home)
    for name in (*FILE_CLIENTS, catalog.CODEX):
        Path(str(catalog.DETECT_DIRS[name](host))).mkdir(parents=True, exist_ok=True)
    return {name: Path(str(catalog.CONFIG_PATHS[name](host)))
            for name in (*FILE_CLIENTS, catalog.CODEX)}


def wire(home: Path, token: str = "", uninstall: bool = False, path: str | None = None,
         skip: frozenset[str] = frozenset({catalog.CLAUDE_DESKTOP}), transport: str = "http") -> dict:
    request = WireRequest(URL, str(home / "ca.pem"), skip=skip, uninstall=uninstall,
                          hooks=False, token=token, transport=transport, command=COMMAND)
    outcomes = wire_clients(request, host_for(home, path))
    for outcome in outcomes:
        assert TOKEN not in outcome.line() and TOKEN not in (outcome.detail or "")
    return {o.client: o for o in outcomes}


def entries(paths: dict[str, Path]) -> dict[str, dict]:
    out = {}
    for name, path in paths.items():
        if name == catalog.CODEX:
            out[name] = tomllib.loads(path.read_text())["mcp_servers"]["velesdb-memory"]
            continue
        client = catalog.JSON_CLIENTS[name]
        data = loads(path.read_text()) if client.jsonc else json.loads(path.read_text())
        out[name] = data[client.key]["velesdb-memory"]
    return out


def test_fresh_files_carry_the_header_in_each_clients_shape(tmp_path: Path) -> None:
    paths = install_clients(tmp_path)
    result = wire(tmp_path, TOKEN)
    assert {n: result[n].action for n in paths} == dict.fromkeys(paths, "added")
    headers = {"headers": {"Authorization": AUTH}}
    assert entries(paths) == {
        "cursor": {"type": "http", "url": URL, **headers},
        "windsurf": {"serverUrl": URL, **headers},
        "devin": {"url": URL, "transport": "http", **headers},
        "cline": {"type": "streamableHttp", "url": URL, "disabled": False, **headers},
        "zed": {"url": URL, **headers},
        "opencode": {"type": "remote", "url": URL, "enabled": True, **headers},
        "codex": {"url": URL, "http_headers": {"Authorization": AUTH}},
    }
    for path in paths.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_rerun_is_unchanged_without_the_token_it_is_kept_a_new_one_replaces_it(
    tmp_path: Path,
) -> None:
    paths = install_clients(tmp_path)
    wire(tmp_path, TOKEN)
    before = {n: p.read_bytes() for n, p in paths.items()}
    for token in (TOKEN, ""):  # the same token, or none (an installer re-run): nothing changes
        again = wire(tmp_path, token)
        assert {n: again[n].action for n in paths} == dict.fromkeys(paths, "unchanged"), token
        assert {n: p.read_bytes() for n, p in paths.items()} == before
    rotated = "vmt_" + "n" * 43
    new = wire(tmp_path, rotated)
    assert {n: new[n].action for n in paths} == dict.fromkeys(paths, "updated")
    for name, entry in entries(paths).items():
        key = "http_headers" if name == catalog.CODEX else "headers"
        assert entry[key] == {"Authorization": f"Bearer {rotated}"}, name
    for path in paths.values():  # the backup of the old file holds the old token: owner-only
        for saved in path.parent.glob(path.name + ".bak.*"):
            assert stat.S_IMODE(saved.stat().st_mode) == 0o600, saved


def test_merging_keeps_other_servers_tightens_the_mode_and_uninstall_removes_the_header(
    tmp_path: Path,
) -> None:
    paths = install_clients(tmp_path)
    cursor = paths["cursor"]
    other = {"mcpServers": {"other": {"url": "https://x.example/mcp",
                                      "headers": {"Authorization": "Bearer theirs"}}}}
    cursor.write_text(json.dumps(other))
    cursor.chmod(0o644)
    codex = paths["codex"]
    codex.write_text('# mine\nmodel = "o3"\n\n[mcp_servers.other]\nurl = "https://x.example/mcp"\n')
    wire(tmp_path, TOKEN)
    merged = json.loads(cursor.read_text())["mcpServers"]
    assert merged["other"] == other["mcpServers"]["other"]
    assert merged["velesdb-memory"]["headers"] == {"Authorization": AUTH}
    assert stat.S_IMODE(cursor.stat().st_mode) == 0o600
    assert "# mine" in codex.read_text() and tomllib.loads(codex.read_text())["model"] == "o3"

    gone = wire(tmp_path, uninstall=True)
    assert {n: gone[n].action for n in paths} == dict.fromkeys(paths, "removed")
    assert json.loads(cursor.read_text()) == other
    assert "# mine" in codex.read_text()
    for path in paths.values():  # files that held only our entry are gone, backups with them
        assert not path.exists() or TOKEN not in path.read_text()
        assert not list(path.parent.glob(path.name + ".bak.*")) or path.exists()
    assert not paths["windsurf"].exists() and not paths["devin"].exists()


def test_a_stdio_entry_hands_the_token_to_the_attaching_process_in_its_environment(
    tmp_path: Path,
) -> None:
    paths = install_clients(tmp_path)
    result = wire(tmp_path, TOKEN, transport="stdio")
    assert {n: result[n].action for n in paths} == dict.fromkeys(paths, "added")
    env = {"VELESDB_MEMORY_AUTH_TOKEN": TOKEN}
    got = entries(paths)
    assert got["cursor"] == {"command": COMMAND, "args": [], "env": env}
    assert got["opencode"] == {"type": "local", "command": [COMMAND], "enabled": True,
                               "environment": env}
    assert got["codex"] == {"command": COMMAND, "args": [], "env": env}
    for path in paths.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    again = wire(tmp_path, "", transport="stdio")  # a re-run without the token keeps it
    assert {n: again[n].action for n in paths} == dict.fromkeys(paths, "unchanged")


@pytest.mark.integration  # the wiring runs the (fake) claude / codex CLIs: processes
def test_claude_code_gets_the_header_as_its_last_argument_and_the_token_stays_out_of_outcomes(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "argv.log"
    claude = bin_dir / "claude"  # records its argv; says it failed when asked to add
    claude.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{log}"\n'
                      'case "$2" in add) echo "bad header $*" >&2; exit 3;; esac\n')
    claude.chmod(0o755)
    only = frozenset(set(catalog.CLIENTS) - {catalog.CLAUDE_CODE})
    (tmp_path / ".claude.json").write_text("{}")  # Claude Code is installed
    failed = wire(tmp_path, TOKEN, path=str(bin_dir), skip=only)["claude-code"]
    assert failed.action == "failed" and "<token>" in failed.detail
    argv = log.read_text().splitlines()
    assert argv[-2:] == ["--header", f"Authorization: {AUTH}"]
    assert argv[:8] == ["mcp", "add", "--transport", "http", "--scope", "user", "velesdb-memory",
                        URL]

    skipped = wire(tmp_path, TOKEN, path=str(tmp_path / "empty-bin"), skip=only)["claude-code"]
    assert skipped.action == "skipped"
    assert '--header "Authorization: Bearer <token>"' in skipped.detail


def test_the_desktop_bridge_names_the_header_and_carries_the_value_in_its_env() -> None:
    mac = Host("Darwin", "/Users/you", {"HOME": "/Users/you", "PATH": "/usr/bin"})
    npx = NodeTools(node="/opt/node/bin/node", npx="/opt/node/bin/npx", mcp_remote=None)
    request = WireRequest(URL, "/Users/you/.velesdb-memory-tls/ca-cert.pem", token=TOKEN)
    entry = desktop_entry(mac, npx, request, AUTH)
    assert entry["args"][-5:] == [URL, "--transport", "http-only", "--header",
                                  "Authorization:${VELESDB_MEMORY_AUTH_HEADER}"]
    assert entry["env"]["VELESDB_MEMORY_AUTH_HEADER"] == AUTH
    assert TOKEN not in " ".join(entry["args"])  # not in the process list
    assert "--header" not in desktop_entry(mac, npx, request)["args"]
    assert TOKEN not in repr(request)


def test_wire_cli_takes_the_token_from_stdin_and_refuses_a_malformed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    import io

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    skips = [a for n in catalog.CLIENTS if n != catalog.CURSOR for a in ("--skip-client", n)]
    monkeypatch.setattr("sys.stdin", io.StringIO(TOKEN + "\n"))
    (tmp_path / ".cursor").mkdir()
    assert main(["wire", "--transport", "http", "--url", URL, "--token", "-", "--no-hooks", *skips]) == 0
    out = capsys.readouterr().out
    assert "with a bearer token" in out and TOKEN not in out
    entry = json.loads((tmp_path / ".cursor/mcp.json").read_text())["mcpServers"]["velesdb-memory"]
    assert entry["headers"] == {"Authorization": AUTH}
    with pytest.raises(SystemExit):
        main(["wire", "--url", URL, "--token", "two words", *skips])
    assert "--token must be the token" in capsys.readouterr().err


def test_wire_cli_without_a_token_writes_no_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    skips = [a for n in catalog.CLIENTS if n != catalog.CURSOR for a in ("--skip-client", n)]
    (tmp_path / ".cursor").mkdir()
    assert main(["wire", "--transport", "http", "--url", URL, "--no-hooks", *skips]) == 0
    assert "with a bearer token" not in capsys.readouterr().out
    entry = json.loads((tmp_path / ".cursor/mcp.json").read_text())["mcpServers"]["velesdb-memory"]
    assert entry == {"type": "http", "url": URL}
