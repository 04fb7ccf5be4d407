"""The address a login attempt comes from, as django-axes counts failures by it."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or behind EEGAB_LOGIN_PROXY_COUNT proxies the address the
    outermost of them appended to X-Forwarded-For (entries left of it are the client's own claims)."""
    proxies = settings.EEGAB_LOGIN_PROXY_COUNT
    remote = request.META.get("REMOTE_ADDR", "")
    if not proxies:
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    # With N proxies, the header's last N entries are theirs; the first of those is the client as
    # the outermost proxy saw it. A shorter header means the request bypassed a proxy.
    return hops[-proxies] if len(hops) >= proxies else remote
