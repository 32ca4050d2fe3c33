"""The estimator over-counts a real cl100k tokenizer on every content class of the committed corpus."""

from __future__ import annotations

import base64
from pathlib import Path

import bpe_openai
import pytest

from context_helpers import compile_, jpeg_bytes, png_b64
from velesmem.context.estimator import estimate_tokens
from velesmem.context.media import image_dimensions

CORPUS = Path(__file__).parent / "estimator_corpus"
FILES = sorted(CORPUS.iterdir())
ENCODING = bpe_openai.get_encoding("cl100k_base")


def real(text: str) -> int:
    return len(ENCODING.encode(text))


def test_the_corpus_covers_every_content_class_the_contract_names() -> None:
    names = {f.stem for f in FILES}
    assert {"prose_en", "prose_fr", "logs", "code_py", "code_rust", "ids", "markdown", "data", "urls", "cjk"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_estimate_is_never_below_cl100k_for_the_file_or_any_line(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert estimate_tokens(text) >= real(text)
    for line in text.splitlines():
        if line.strip():
            assert estimate_tokens(line) >= real(line), line


def test_png_and_jpeg_cost_ceil_of_pixels_over_750_from_the_header() -> None:
    assert image_dimensions(base64.b64decode(png_b64(800, 600))) == (800, 600)
    assert image_dimensions(jpeg_bytes(1024, 768)) == (1024, 768)
    out = compile_([{"content": "", "media": {"mime": "image/png", "bytes_b64": png_b64(100, 80)}}], budget=10_000)
    assert out["insights"]["tokens_in"] == -(-100 * 80 // 750)
    jpeg = base64.b64encode(jpeg_bytes(1024, 768)).decode()
    out = compile_([{"content": "", "media": {"mime": "image/jpeg", "bytes_b64": jpeg}}], budget=10_000)
    assert out["insights"]["tokens_in"] == -(-1024 * 768 // 750)


def test_an_unreadable_image_header_falls_back_to_a_base64_over_count() -> None:
    b64 = base64.b64encode(b"not an image at all, just bytes" * 10).decode()
    out = compile_([{"content": "", "media": {"mime": "image/webp", "bytes_b64": b64}}], budget=10_000)
    assert out["insights"]["tokens_in"] >= len(b64) // 2
