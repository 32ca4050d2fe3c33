"""Request bodies: the per-request cap, a budget for all bodies in flight, and one copy each.

- Over the cap → 413, by Content-Length before reading, or as soon as a streamed body passes it.
  The answer carries no ``Connection: close``: the connection drains what the client still sends
  (``connections.py``), so the client reads the 413 instead of a reset.
- A body is parsed while its call runs, so it costs a few times its size. Bodies above
  ``HTTP_BODY_BUDGET_EXEMPT_BYTES`` share one budget across all connections: beyond it, a request
  waits in line (its bytes stay in the client's socket, not here), then gets a worded 503.
- The whole body is received before the app runs and handed over chunk by chunk, each chunk given
  away as it is read (no copy here); the SDK's own body limit, which keeps two more copies, is
  bypassed since this one enforces the same cap. Starlette then joins the chunks into the one copy
  the SDK parses; FastMCP's strict input validation re-serializes the arguments, so a large call
  still costs a few times its size while it runs.
"""

from __future__ import annotations

import asyncio
import gc
from collections import deque
from collections.abc import Awaitable, Callable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from velesmem import limits
from velesmem.config import ENV_PREFIX
from velesmem.daemon.guards import jsonrpc_refusal, plain_refusal

MIB = limits.MIB


class BodyBudget:
    """Bytes of request bodies admitted at once; first come, first served. A body larger than the
    whole budget is admitted alone, so the per-request cap, not this, decides what is too big."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._queue: deque[tuple[int, asyncio.Future[None]]] = deque()

    def _fits(self, size: int) -> bool:
        return self.used == 0 or self.used + size <= self.total

    async def acquire(self, size: int, timeout_s: float) -> bool:
        """Reserve ``size`` bytes, waiting at most ``timeout_s`` in line; False if the wait ran out."""
        if not self._queue and self._fits(size):
            self.used += size
            return True
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((size, granted))
        try:
            await asyncio.wait_for(asyncio.shield(granted), timeout_s)
            return True
        except TimeoutError:
            return self._withdraw(size, granted)
        except BaseException:
            if self._withdraw(size, granted):
                self.release(size)
            raise

    def _withdraw(self, size: int, granted: asyncio.Future[None]) -> bool:
        """Leave the line; if the grant raced the timeout, keep it (True)."""
        if granted.done():
            return True
        granted.cancel()
        self._grant()  # those behind us may fit now
        return False

    def release(self, size: int) -> None:
        self.used -= size
        self._grant()

    def _grant(self) -> None:
        while self._queue:
            size, granted = self._queue[0]
            if granted.done():  # withdrawn
                self._queue.popleft()
                continue
            if not self._fits(size):
                return
            self._queue.popleft()
            self.used += size
            granted.set_result(None)


class BodyGate:
    """The cap, the budget and the single copy for POST bodies (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, budget: BodyBudget,
                 queue_timeout_s: float = float(limits.HTTP_BODY_QUEUE_SECONDS)) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.budget = budget
        self.queue_timeout_s = queue_timeout_s

    def _too_large(self) -> str:
        return (f"Request body too large: the limit is {self.max_bytes} bytes "
                f"({ENV_PREFIX}HTTP_MAX_BODY_BYTES)")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared_raw = Headers(scope=scope).get("content-length")
        declared: int | None = None
        if declared_raw is not None:
            try:
                declared = int(declared_raw)
            except ValueError:
                await plain_refusal(send, 400, "Bad Request: invalid Content-Length")
                return
            if declared > self.max_bytes:
                await plain_refusal(send, 413, self._too_large())
                return
        # Unknown length (chunked): reserve for the worst case, the cap.
        reserve = 0
        if declared is None or declared > limits.HTTP_BODY_BUDGET_EXEMPT_BYTES:
            reserve = self.max_bytes if declared is None else declared
            if not await self.budget.acquire(reserve, self.queue_timeout_s):
                await jsonrpc_refusal(
                    send, 503,
                    f"velesdb-memory is busy: {self.budget.used // MIB} MiB of request bodies are "
                    f"already in flight ({ENV_PREFIX}HTTP_MAX_BODY_BYTES_IN_FLIGHT="
                    f"{self.budget.total}); retry shortly", extra=[(b"retry-after", b"1")],
                )
                return
        try:
            chunks = await self._read(receive, send)
            if chunks is None:
                return  # refused (413 sent) or the client went away
            await self.app(scope, replay_chunks(chunks, receive), send)
        finally:
            if reserve:
                # The SDK and FastMCP leave a call's parsed arguments in reference cycles (an error
                # and its traceback frames); freed only by the cyclic collector, several large
                # bodies would pile up. Collect before the next large body is admitted (cheap: the
                # heap built at startup is frozen, see server.py).
                gc.collect()
                self.budget.release(reserve)

    async def _read(self, receive: Receive, send: Send) -> deque[bytes] | None:
        """The whole body as its chunks, or None (refused with 413, or the client went away)."""
        chunks: deque[bytes] = deque()
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # http.disconnect
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > self.max_bytes:
                await plain_refusal(send, 413, self._too_large())
                return None
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks


def replay_chunks(chunks: deque[bytes], receive: Receive) -> Callable[[], Awaitable[Message]]:
    """A ``receive`` that hands out ``chunks`` (giving each away) as one body, then defers to
    ``receive`` (for the disconnect)."""
    started = False

    async def replay() -> Message:
        nonlocal started
        if chunks or not started:
            started = True
            body = chunks.popleft() if chunks else b""
            return {"type": "http.request", "body": body, "more_body": bool(chunks)}
        return await receive()

    return replay
