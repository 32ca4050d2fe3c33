"""Cline, Zed and opencode, wired like the others: detected by their directory, written fresh
(the default stdio entry, and the HTTPS URL with ``transport="http"``),
merged into an existing config (Zed's and opencode's comments kept), a re-run changes nothing,
and the uninstall removes exactly our entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from velesmem.clients import Host, WireRequest, catalog, wire_clients
from velesmem.clients.jsonc import loads
from velesmem.clients.wiring import wired_urls

URL = "https://127.0.0.1:18611/mcp"
CMD = "/opt/velesmem/venv/bin/velesdb-memory"
NEW = (catalog.CLINE, catalog.ZED, catalog.OPENCODE)
OTHERS = frozenset(set(catalog.CLIENTS) - set(NEW))

ZED_ORIGINAL = """// Zed settings
//
// For information on how to configure Zed, see the Zed documentation.
{
  "theme": "One Dark", // kept
  /* a block comment */
  "context_servers": {
    "other": { "command": "/bin/other", "args": [], },
  },
}
"""
OPENCODE_ORIGINAL = """{
  "$schema": "https://opencode.ai/config.json",
  // my model
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    "other": { "type": "local", "command": ["/bin/other"], "enabled": true },
  },
}
"""
CLINE_ORIGINAL = {"mcpServers": {"other": {"command": "/bin/other", "disabled": False, "autoApprove": []}}}


def host_for(home: Path) -> Host:
    return Host("Linux", str(home), {"HOME": str(home), "PATH": str(home / "empty-bin")})


def wire(home: Path, uninstall: bool = False, transport: str = "http") -> dict:
    request = WireRequest(URL, str(home / "ca.pem"), skip=OTHERS, uninstall=uninstall,
                          transport=transport, command=CMD)
    return {o.client: o for o in wire_clients(request, host_for(home))}


def install_clients(home: Path) -> dict[str, Path]:
    """Each client's directory, as the client itself leaves it once it has run."""
    host = host_for(home)
    for name in NEW:
        Path(str(catalog.DETECT_DIRS[name](host))).mkdir(parents=True)
    return {name: Path(str(catalog.CONFIG_PATHS[name](host))) for name in NEW}


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak.*"))


def test_a_client_that_is_not_installed_is_skipped_and_nothing_is_created(tmp_path: Path) -> None:
    result = wire(tmp_path)
    for name in NEW:
        assert result[name].action == "skipped" and "not installed" in result[name].detail
    assert not (tmp_path / ".config").exists()
    assert wired_urls(host_for(tmp_path), NEW) == {}  # doctor does not list them


def test_fresh_files_have_each_clients_shape(tmp_path: Path) -> None:
    paths = install_clients(tmp_path)
    result = wire(tmp_path)
    assert {name: result[name].action for name in NEW} == dict.fromkeys(NEW, "added")
    assert json.loads(paths["cline"].read_text()) == {
        "mcpServers": {"velesdb-memory": {"type": "streamableHttp", "url": URL, "disabled": False}}}
    assert json.loads(paths["zed"].read_text()) == {"context_servers": {"velesdb-memory": {"url": URL}}}
    assert json.loads(paths["opencode"].read_text()) == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"velesdb-memory": {"type": "remote", "url": URL, "enabled": True}}}
    assert "NODE_EXTRA_CA_CERTS" in result["opencode"].detail and "trust" in result["zed"].detail
    assert {name: wired_urls(host_for(tmp_path), NEW)[name][0] for name in NEW} == dict.fromkeys(NEW, URL)


def test_the_default_stdio_entries_have_each_clients_shape(tmp_path: Path) -> None:
    paths = install_clients(tmp_path)
    result = wire(tmp_path, transport="stdio")
    assert {name: result[name].action for name in NEW} == dict.fromkeys(NEW, "added")
    assert json.loads(paths["cline"].read_text()) == {
        "mcpServers": {"velesdb-memory": {"command": CMD, "args": [], "disabled": False}}}
    assert json.loads(paths["zed"].read_text()) == {
        "context_servers": {"velesdb-memory": {"command": CMD, "args": []}}}
    assert json.loads(paths["opencode"].read_text()) == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"velesdb-memory": {"type": "local", "command": [CMD], "enabled": True}}}
    switched = wire(tmp_path)  # back to the URL: each entry replaced in place
    assert {name: switched[name].action for name in NEW} == dict.fromkeys(NEW, "updated")


def test_merge_keeps_comments_and_every_other_key_rerun_is_unchanged_uninstall_is_exact(tmp_path: Path) -> None:
    paths = install_clients(tmp_path)
    paths["zed"].write_text(ZED_ORIGINAL)
    paths["opencode"].write_text(OPENCODE_ORIGINAL)
    paths["cline"].parent.mkdir(parents=True)
    paths["cline"].write_text(json.dumps(CLINE_ORIGINAL))

    first = wire(tmp_path)
    assert {name: first[name].action for name in NEW} == dict.fromkeys(NEW, "added")
    zed = paths["zed"].read_text()
    assert "// Zed settings" in zed and "// kept" in zed and "/* a block comment */" in zed
    assert loads(zed) == {"theme": "One Dark", "context_servers": {
        "velesdb-memory": {"url": URL}, "other": {"command": "/bin/other", "args": []}}}
    opencode = paths["opencode"].read_text()
    assert "// my model" in opencode
    assert loads(opencode)["mcp"] == {"velesdb-memory": {"type": "remote", "url": URL, "enabled": True},
                                      "other": {"type": "local", "command": ["/bin/other"], "enabled": True}}
    assert json.loads(paths["cline"].read_text())["mcpServers"]["other"] == CLINE_ORIGINAL["mcpServers"]["other"]
    for name in NEW:  # each original was backed up, byte for byte
        (saved,) = backups(paths[name])
        assert saved.read_text() == {"zed": ZED_ORIGINAL, "opencode": OPENCODE_ORIGINAL,
                                     "cline": json.dumps(CLINE_ORIGINAL)}[name]

    before = {name: (paths[name].read_bytes(), backups(paths[name])) for name in NEW}
    again = wire(tmp_path)
    assert {name: again[name].action for name in NEW} == dict.fromkeys(NEW, "unchanged")
    assert {name: (paths[name].read_bytes(), backups(paths[name])) for name in NEW} == before

    gone = wire(tmp_path, uninstall=True)
    assert {name: gone[name].action for name in NEW} == dict.fromkeys(NEW, "removed")
    assert paths["zed"].read_text() == ZED_ORIGINAL
    assert paths["opencode"].read_text() == OPENCODE_ORIGINAL
    assert json.loads(paths["cline"].read_text()) == CLINE_ORIGINAL
    assert {name: wire(tmp_path, uninstall=True)[name].action for name in NEW} == dict.fromkeys(NEW, "absent")


def test_a_new_url_updates_the_entry_in_place(tmp_path: Path) -> None:
    paths = install_clients(tmp_path)
    paths["zed"].write_text(ZED_ORIGINAL)
    wire(tmp_path)
    request = WireRequest("https://127.0.0.1:18612/mcp", "ca.pem", skip=OTHERS, transport="http")
    result = {o.client: o for o in wire_clients(request, host_for(tmp_path))}
    assert {name: result[name].action for name in NEW} == dict.fromkeys(NEW, "updated")
    assert loads(paths["zed"].read_text())["context_servers"]["velesdb-memory"] == {
        "url": "https://127.0.0.1:18612/mcp"}
    assert "// kept" in paths["zed"].read_text()


@pytest.mark.parametrize("content", ['{"context_servers": {,}', '{"context_servers": []}', "[1]",
                                     '{"a": 1} trailing', '{"a": /* open'])
def test_unusable_zed_settings_are_refused_left_identical_and_reported(tmp_path: Path, content: str) -> None:
    paths = install_clients(tmp_path)
    paths["zed"].write_text(content)
    result = wire(tmp_path)
    assert result["zed"].action == "refused" and str(paths["zed"]) in result["zed"].detail
    assert result["zed"].summary_status() == "warning"
    assert paths["zed"].read_text() == content and not backups(paths["zed"])
    assert result["opencode"].action == "added"  # one bad file stops nothing else
