"""The docs state the embedder a new store really gets: ``local`` when the ``embed`` extra is
installed (the installers install it by default), else ``hash`` — not "hash is the default"."""

from __future__ import annotations

import re
from pathlib import Path

from velesmem.config import SETTINGS

ROOT = Path(__file__).resolve().parents[1]


def _doc(name: str) -> str:
    return " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())


def test_the_code_gives_a_new_store_local_with_the_embed_extra_else_hash() -> None:
    help_text = " ".join(next(s for s in SETTINGS if s.env_name.endswith("_EMBEDDER")).help.split())
    assert "for a new store local when velesmem[embed] is installed, else hash" in help_text
    assert "EXTRAS=${VELESMEM_INSTALL_EXTRAS-embed}" in (
        ROOT / "installers" / "install-memory-daemon.sh").read_text(encoding="utf-8")


def test_no_doc_calls_hash_the_default_embedder() -> None:
    wrong = re.compile(r"`hash` \(default\)|`hash` \(the default|the offline `hash` default"
                       r"|`hash` is the default")
    found = {name: wrong.findall(_doc(name)) for name in ("installers.md", "embedders.md",
                                                         "migration.md")}
    assert not any(found.values()), found


def test_embedders_and_installers_docs_name_local_for_a_new_store() -> None:
    assert "a new store gets **`local`** when the `embed` extra is installed" in _doc("embedders.md")
    assert "a new store gets `local`" in _doc("installers.md")
