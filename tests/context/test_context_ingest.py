"""The path-ingest security suite: each bad path gets its typed error; no error names a symlink target."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from context_helpers import png_b64, request
from velesmem import limits
from velesmem.context.ingest import IngestRoots
from velesmem.context.media import png_bytes
from velesmem.context.service import ContextService
from velesmem.errors import ContextOverLimit, IngestOutsideRoots, IngestPath, Internal, VelesmemError


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    evil = tmp_path / "root-evil"
    secret = tmp_path / "secret-place"
    for d in (root, evil, secret):
        d.mkdir()
    (root / "ok.txt").write_text("allowed text, ok", encoding="utf-8")
    (root / "sub").mkdir()
    (evil / "loot.txt").write_text("should never be read")
    (secret / "key.txt").write_text("secret material")
    (root / "escape.txt").symlink_to(secret / "key.txt")
    (root / "inside-link.txt").symlink_to(root / "ok.txt")
    (root / "big.txt").write_text("x" * (limits.MAX_INGEST_FILE_BYTES + 1))
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "shot.png").write_bytes(png_bytes(4, 4))
    return {"root": root, "evil": evil, "secret": secret}


def compile_path(tree: dict[str, Path], path: str, **frag: object) -> dict:
    service = ContextService(roots=IngestRoots.from_settings((str(tree["root"]),)))
    return service.compile_context(request([{"path": path, **frag}]))


def error_for(tree: dict[str, Path], path: str, **frag: object) -> VelesmemError:
    with pytest.raises(VelesmemError) as info:
        compile_path(tree, path, **frag)
    return info.value


def test_a_file_under_the_root_is_read_and_a_symlink_inside_the_root_is_allowed(tree) -> None:
    assert compile_path(tree, str(tree["root"] / "ok.txt"))["content"] == "allowed text, ok"
    assert compile_path(tree, str(tree["root"] / "inside-link.txt"))["content"] == "allowed text, ok"


def test_relative_path(tree) -> None:
    assert type(error_for(tree, "root/ok.txt")) is IngestPath


def test_dot_dot_escape(tree) -> None:
    err = error_for(tree, str(tree["root"] / ".." / "secret-place" / "key.txt"))
    assert type(err) is IngestOutsideRoots


def test_symlink_escaping_the_root_never_names_its_target(tree) -> None:
    asked = str(tree["root"] / "escape.txt")
    err = error_for(tree, asked)
    assert type(err) is IngestOutsideRoots
    assert asked in err.message
    assert "secret" not in err.message and "key.txt" not in err.message


def test_sibling_directory_sharing_a_name_prefix(tree) -> None:
    assert type(error_for(tree, str(tree["evil"] / "loot.txt"))) is IngestOutsideRoots


def test_directory(tree) -> None:
    assert type(error_for(tree, str(tree["root"] / "sub"))) is IngestPath


def test_missing_file(tree) -> None:
    assert type(error_for(tree, str(tree["root"] / "nope.txt"))) is IngestPath


def test_oversized_file_is_refused_before_reading(tree) -> None:
    assert type(error_for(tree, str(tree["root"] / "big.txt"))) is ContextOverLimit


def test_non_utf8(tree) -> None:
    err = error_for(tree, str(tree["root"] / "latin1.txt"))
    assert type(err) is IngestPath and "UTF-8" in err.message


def test_png_bytes_get_a_media_hint(tree) -> None:
    err = error_for(tree, str(tree["root"] / "shot.png"))
    assert type(err) is IngestPath and "media fragment" in err.message


def test_path_with_content_or_media_is_refused_even_when_ingest_is_off(tree) -> None:
    for extra in ({"content": "x"}, {"media": {"mime": "image/png", "bytes_b64": png_b64(2, 2)}}):
        with pytest.raises(IngestPath, match="cannot also carry"):
            ContextService().compile_context(request([{"path": "/x", **extra}]))


def test_a_bad_root_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for bad in (str(tmp_path / "missing"), str(tmp_path / "file"), "relative/dir"):
        with pytest.raises(Internal):
            IngestRoots.from_settings((bad,))


def test_a_symlink_target_is_never_revealed_anywhere_in_the_message(tree) -> None:
    link = tree["root"] / "dangling.txt"
    os.symlink(tree["secret"] / "missing-target.txt", link)
    err = error_for(tree, str(link))
    assert "secret" not in err.message and "missing-target" not in err.message
