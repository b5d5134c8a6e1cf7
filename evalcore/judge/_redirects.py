"""Redirects: a request to an endpoint is never sent on to another host.

The ``openai`` client follows redirects by default, and a ``307`` or ``308`` repeats the request,
body and all, at the new address: an endpoint host an admin allowed (or a proxy in front of it)
could hand every prompt to any host. Every client evalcore makes goes through an HTTP client
with :func:`refuse_foreign_redirect` as a response hook:

- a redirect to the same origin (scheme, host and port) as the request is followed, as before
  (a path moved on the same server; httpx stops after 20 in a row);
- a redirect anywhere else (another host, another port, or another scheme: an ``http`` endpoint
  that redirects to ``https`` too, whose base URL should then say ``https``) is refused before
  anything is sent there: the call fails with a
  :class:`RedirectRefusedError`, an ``openai.APIStatusError`` with the redirect's status and an
  error of type ``redirect_refused`` naming both origins. The runner records the item as failed
  with that message and does not retry it (a 3xx is not a status worth retrying).
"""

from __future__ import annotations

from typing import Any

import openai

__all__ = [
    "REDIRECT_REFUSED",
    "RedirectRefusedError",
    "refuse_foreign_redirect",
    "same_origin_client",
]

#: The error type of a refused redirect (what the run's failure message shows in brackets).
REDIRECT_REFUSED = "redirect_refused"

_DEFAULT_PORTS = {"http": 80, "https": 443}


class RedirectRefusedError(openai.APIStatusError):
    """An endpoint answered with a redirect to another origin; nothing was sent there."""


def _origin(url: Any) -> str:
    scheme = str(url.scheme).lower()
    port = url.port or _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{str(url.host).lower()}:{port}"


async def refuse_foreign_redirect(response: Any) -> None:
    """An httpx response hook: raise :class:`RedirectRefusedError` when ``response`` redirects to
    another scheme, host or port than its request's (a same-origin redirect passes)."""
    if not response.has_redirect_location:
        return
    request = response.request
    here = _origin(request.url)
    location = response.headers.get("location", "")
    try:
        there = _origin(request.url.join(location))
    except Exception:  # a Location that is not a URL goes nowhere
        there = "an address that is not a URL"
    if there == here:
        return
    message = (
        f"the endpoint ({here}) redirected the request to {there[:80]}; evalcore sends requests "
        "only to the endpoint's own host (set the base URL to where it points)"
    )
    body = {"error": {"message": message, "type": REDIRECT_REFUSED, "code": REDIRECT_REFUSED}}
    raise RedirectRefusedError(message, response=response, body=body)


def same_origin_client(http_client: Any = None) -> Any:
    """``http_client`` (an ``httpx`` async client as the ``openai`` SDK takes it; by default a new
    ``openai.DefaultAsyncHttpxClient``, the SDK's own settings) with :func:`refuse_foreign_redirect`
    among its response hooks (added once)."""
    client = openai.DefaultAsyncHttpxClient() if http_client is None else http_client
    hooks = client.event_hooks
    responses = list(hooks.get("response", []))
    if refuse_foreign_redirect not in responses:
        client.event_hooks = {**hooks, "response": [*responses, refuse_foreign_redirect]}
    return client
