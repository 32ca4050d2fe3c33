"""Every request gets an answer: concurrent requests reusing one JSON-RPC id on a session are each
answered at once — served, or refused with an error naming the id — never left open."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest
from daemon_helpers import Daemon, open_session, session_headers

from velesmem.daemon.request_ids import ID_PEEK_BYTES, request_id

pytestmark = [pytest.mark.anyio]

SAME_ID = 7
CONCURRENT = 8
ANSWER_DEADLINE_S = 30  # the old failure: unanswered requests, kept open by pings every 15 s


def _call(request_id: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "recall_fused", "arguments": {"query": "who reuses ids", "k": 10,
                                                              "hops": 10, "pool": 1000}}}


@pytest.mark.integration
async def test_concurrent_requests_reusing_one_id_are_each_answered_or_refused_at_once(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon().start()
    session_id = open_session(daemon)
    async with httpx.AsyncClient(verify=daemon.ssl_context(), timeout=60) as http:
        async def post() -> httpx.Response:
            return await http.post(daemon.url, headers=session_headers(session_id), json=_call(SAME_ID))

        answers = await asyncio.wait_for(asyncio.gather(*(post() for _ in range(CONCURRENT))), ANSWER_DEADLINE_S)
        served = [a for a in answers if a.status_code == 200]
        refused = [a for a in answers if a.status_code == 409]
        assert len(served) + len(refused) == CONCURRENT, [(a.status_code, a.text[:200]) for a in answers]
        assert served and refused, "the requests did not overlap"
        for answer in served:
            assert f'"id":{SAME_ID}' in answer.text and '"result"' in answer.text, answer.text[:300]
        for answer in refused:
            error = answer.json()
            assert error["id"] == SAME_ID and error["error"]["code"] == -32600
            assert f"request id {SAME_ID} is already in flight" in error["error"]["message"]
        # Once answered, the id is free again.
        again = await post()
        assert again.status_code == 200 and '"result"' in again.text


def test_request_id_is_read_from_a_prefix_and_a_cut_number_is_not_trusted() -> None:
    big = json.dumps(_call(123456) | {"padding": "p" * (2 * ID_PEEK_BYTES)}).encode()
    assert request_id([big]) == (True, 123456)
    # Split anywhere, the chunks give the same answer.
    assert request_id([big[:10], big[10:ID_PEEK_BYTES + 5], big[ID_PEEK_BYTES + 5:]]) == (True, 123456)
    # The id last in a prefix may be cut short ("12" of "123456"): the whole body decides.
    late = b'{"method":"tools/call","jsonrpc":"2.0","id":123456,"params":{"x":"' + b"p" * (2 * ID_PEEK_BYTES) + b'"}}'
    cut = late.index(b"123456") + 2
    assert request_id([late[:cut], late[cut:]]) == (True, 123456)
    assert request_id([b'{"jsonrpc":"2.0","method":"notifications/initialized"}']) == (False, None)
    assert request_id([b'{"jsonrpc":"2.0","id":3,"result":{}}']) == (False, None)  # a response
    assert request_id([b"not json"]) == (False, None)
