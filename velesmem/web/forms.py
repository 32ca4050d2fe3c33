"""A dashboard POST's form body: urlencoded only, read with a size cap, parsed into a flat
``{name: value}`` (the last value of a repeated name wins)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

from velesmem import limits
from velesmem.errors import InvalidInput

FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FIELDS = 32


async def read_form(request: Request) -> dict[str, str]:
    """The form fields of ``request`` ({} for an empty body); InvalidInput for another content type, a body over
    ``MAX_DASHBOARD_FORM_BYTES`` or text that is not UTF-8."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not kind and request.headers.get("content-length", "0") == "0":
        return {}  # an empty POST: no fields (so no CSRF token either)
    if kind != FORM_TYPE:
        raise InvalidInput(f"a dashboard form must be sent as {FORM_TYPE}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limits.MAX_DASHBOARD_FORM_BYTES:
            raise InvalidInput(f"the form is over the {limits.MAX_DASHBOARD_FORM_BYTES}-byte cap")
    try:
        text = bytes(body).decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=False,
                          max_num_fields=MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(f"the form could not be read: {exc}") from None
    return dict(pairs)
