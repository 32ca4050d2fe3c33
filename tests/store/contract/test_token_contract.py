"""What every backend promises about bearer tokens (``TokenStore`` in velesmem/store/protocol.py):
durable, one live token per name, revocation kept for the audit, and changes made through a
second handle (``velesdb-memory token`` while the daemon serves) seen by the serving store at
once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from velesmem.config import Settings
from velesmem.errors import InvalidInput
from velesmem.store import Store, TokenRecord, open_token_store

from .conftest import NOW

DIGEST_A = "a" * 64
DIGEST_B = "b" * 64
DIGEST_C = "c" * 64


def test_a_token_is_recorded_found_by_its_digest_and_listed(store: Store) -> None:
    assert store.tokens() == []
    made = store.put_token("alice", DIGEST_A, NOW)
    assert made == TokenRecord("alice", DIGEST_A, NOW, None) and made.live
    assert store.find_token_by_hash(DIGEST_A) == made
    assert store.find_token_by_hash(DIGEST_B) is None
    store.put_token("bob", DIGEST_B, NOW + 1)
    assert [t.name for t in store.tokens()] == ["alice", "bob"]  # oldest first


def test_one_live_token_per_name_and_a_refused_put_changes_nothing(store: Store) -> None:
    store.put_token("alice", DIGEST_A, NOW)
    with pytest.raises(InvalidInput, match="live token named 'alice' already exists"):
        store.put_token("alice", DIGEST_B, NOW + 1)
    assert store.find_token_by_hash(DIGEST_B) is None
    assert [t.digest for t in store.tokens()] == [DIGEST_A]


def test_revoking_keeps_the_record_and_frees_the_name(store: Store) -> None:
    store.put_token("alice", DIGEST_A, NOW)
    revoked = store.revoke_token("alice", NOW + 5)
    assert revoked == TokenRecord("alice", DIGEST_A, NOW, NOW + 5) and not revoked.live
    assert store.find_token_by_hash(DIGEST_A) == revoked  # still found, as revoked
    assert store.revoke_token("alice", NOW + 6) is None  # nothing live left under that name
    assert store.revoke_token("nobody", NOW + 6) is None
    store.put_token("alice", DIGEST_B, NOW + 7)  # a rotated token, same author name
    assert [(t.digest, t.live) for t in store.tokens()] == [(DIGEST_A, False), (DIGEST_B, True)]


def test_tokens_survive_closing_and_reopening(open_backend: Callable[[], Store]) -> None:
    first = open_backend()
    first.put_token("alice", DIGEST_A, NOW)
    first.revoke_token("alice", NOW + 1)
    first.put_token("bob", DIGEST_B, NOW + 2)
    first.close()
    again = open_backend()
    assert [(t.name, t.revoked_at) for t in again.tokens()] == [("alice", NOW + 1), ("bob", None)]


def test_a_second_handle_changes_tokens_while_the_store_serves(
    store: Store, backend_settings: Settings,
) -> None:
    store.put_token("alice", DIGEST_A, NOW)
    side = open_token_store(backend_settings, NOW)  # what `velesdb-memory token` opens
    try:
        assert [t.name for t in side.tokens()] == ["alice"]
        side.put_token("carol", DIGEST_C, NOW + 1)
        assert store.find_token_by_hash(DIGEST_C) is not None  # seen at once, no restart
        side.revoke_token("alice", NOW + 2)
        assert not store.find_token_by_hash(DIGEST_A).live
        store.put_token("dave", DIGEST_B, NOW + 3)
        assert side.find_token_by_hash(DIGEST_B).name == "dave"
    finally:
        side.close()
