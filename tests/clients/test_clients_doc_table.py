"""docs/clients.md shows the same client → transport, runtime, trust, check table as the code."""

from __future__ import annotations

from pathlib import Path

from velesmem.clients import catalog

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"


def _doc_rows() -> dict[str, tuple[str, str, tuple[str, ...], str]]:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("| client | transport | runtime | trust | check |", 1)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        name, transport, runtime, trust, check = (c.strip().strip("`") for c in line.strip("|").split("|"))
        variables = tuple(t.strip().strip("`") for t in trust.split(","))
        rows[name] = (transport, runtime, variables, "" if check == "not verifiable" else check)
    return rows


def test_the_docs_table_matches_the_connections_in_code() -> None:
    code = {name: (c.transport, c.runtime, c.trust, c.check) for name, c in catalog.CONNECTIONS.items()}
    assert _doc_rows() == code


def test_the_client_table_names_the_same_variables_as_trust_cas_runtime_hints() -> None:
    from velesmem.service.trust import RUNTIME_TRUST

    runtimes = {"Bun": "bun", "Node 20": "node", "Rust (rustls)": "rust"}
    checked = 0
    for name, conn in catalog.CONNECTIONS.items():
        if conn.runtime in runtimes:
            assert conn.trust == RUNTIME_TRUST[runtimes[conn.runtime]].variables, name
            checked += 1
    assert checked == 5  # Claude Code, opencode, Codex, Gemini CLI, Qwen Code
