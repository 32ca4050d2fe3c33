"""Turn a parsed request's fragments into pipeline items: exclusivity, media, path ingestion."""

from __future__ import annotations

from functools import lru_cache

from velesmem.context.estimator import estimate_tokens
from velesmem.context.ingest import IngestBudget, IngestRoots, check_file_count, read_path
from velesmem.context.items import Item
from velesmem.context.media import decode_media
from velesmem.context.model import CompileRequest, FragmentIn
from velesmem.errors import ContextOverLimit, IngestPath, InvalidInput
from velesmem.ids import fnv1a64
from velesmem.limits import MAX_FRAGMENT_BYTES, MAX_REQUEST_MEDIA_B64_BYTES

# Fragments are re-sent turn after turn and FNV in Python costs ~50 ns/byte, so hashes of small
# sources are memoised; the bounds keep the cache under 64 MiB.
HASH_CACHE_SIZE = 1024
CACHED_HASH_BYTES = 64 * 1024


@lru_cache(maxsize=HASH_CACHE_SIZE)
def _cached_hash(data: bytes) -> int:
    return fnv1a64(data)


def content_hash(data: bytes) -> int:
    """The FNV-1a content hash of a fragment's source bytes."""
    return _cached_hash(data) if len(data) <= CACHED_HASH_BYTES else fnv1a64(data)



def check_exclusive(frag: FragmentIn, index: int) -> None:
    """Step 1: exactly one of path, non-empty content, or media (a caption may go with media)."""
    where = f"fragments[{index}]"
    if frag.path is not None:
        if frag.content is not None or frag.media is not None:
            raise IngestPath(f"{where}: a path fragment cannot also carry content or media")
        return
    if frag.media is None and not frag.content:
        raise InvalidInput(f"{where} needs exactly one of path, non-empty content, or media")


def build_items(request: CompileRequest, roots: IngestRoots) -> list[Item]:
    """One item per request fragment, in input order; raises the typed error of the first problem."""
    for i, frag in enumerate(request.fragments):
        check_exclusive(frag, i)
    check_file_count(sum(1 for f in request.fragments if f.path is not None))
    media_total = 0
    for frag in request.fragments:
        if frag.media is not None and isinstance(frag.media.bytes_b64, str):
            media_total += len(frag.media.bytes_b64)
    if media_total > MAX_REQUEST_MEDIA_B64_BYTES:
        raise ContextOverLimit(
            f"the request's media total {media_total} bytes of base64; the cap is "
            f"{MAX_REQUEST_MEDIA_B64_BYTES} per request"
        )
    budget = IngestBudget()
    items: list[Item] = []
    for i, frag in enumerate(request.fragments):
        where = f"fragments[{i}]"
        if frag.path is not None:
            text = read_path(roots, frag.path, budget, where=f"{where}.path")
        else:
            text = frag.content or ""
        if len(text.encode("utf-8")) > MAX_FRAGMENT_BYTES:
            raise ContextOverLimit(
                f"{where} content is over the {MAX_FRAGMENT_BYTES}-byte cap per fragment"
            )
        media = None
        if frag.media is not None:
            media = decode_media(frag.media.mime, frag.media.bytes_b64, f"{where}.media")
        source = media.data if media is not None else text.encode("utf-8")
        digest = content_hash(source)
        tokens = estimate_tokens(text) + (media.tokens if media is not None else 0)
        items.append(
            Item(
                order=i,
                index=i,
                fragment_id=frag.id if frag.id is not None else digest,
                content_hash=digest,
                text=text,
                kind=frag.kind,
                priority=frag.priority,
                metadata=frag.metadata,
                media=media,
                tokens=tokens,
            )
        )
    return items
