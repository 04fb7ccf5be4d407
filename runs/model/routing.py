"""Which way a model is called (litellm or direct HTTP) and with which tool protocol.

Also the checks on a run's model settings: the key's variable, the API base and its host, the transport.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from functools import cache
from urllib.parse import urlsplit

from runs.cost import litellm_model_info
from runs.model import openai_http

PROTOCOLS = ("native", "text")
TRANSPORTS = ("litellm", "direct")
# The variable litellm reads a provider's key from when a run names none.
PROVIDER_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}


# What a run may never name as its key: the platform's own settings (their values would be sent as a
# bearer key to the server the run names).
PLATFORM_VARIABLES = frozenset({"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS", "DEBUG"})
PLATFORM_PREFIXES = ("EEGAB_", "DJANGO_")


def check_key_env(name: str) -> None:
    """Refuse a key variable a run may not name (ValueError); a blank name is the provider's default."""
    from django.conf import settings

    if not name:
        return
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):  # not echoed: it may be the key itself
        raise ValueError("Give the name of the environment variable that holds the key, not the key.")
    if name in PLATFORM_VARIABLES or name.startswith(PLATFORM_PREFIXES):
        raise ValueError(f"{name} is a setting of the platform, not a model's API key.")
    allowed = list(settings.EEGAB_PROVIDER_KEY_ENVS)
    if name not in allowed:
        raise ValueError(
            f"{name} is not a key variable runs may name; the allowed ones are {', '.join(allowed)} "
            "(the EEGAB_PROVIDER_KEY_ENVS setting)."
        )


def check_api_base(url: str) -> None:
    """Refuse an API base with credentials in it (ValueError, which does not repeat them)."""
    if url and (urlsplit(url).username is not None or urlsplit(url).password is not None):
        raise ValueError("The API base may not hold credentials (user:password@); name the key's variable instead.")


# Hosts no run from the form or the environment API may name, whatever EEGAB_ALLOWED_API_HOSTS lists:
# link-local networks and the cloud providers' metadata services, which hand out the machine's credentials.
REFUSED_NETWORKS = tuple(ipaddress.ip_network(network) for network in (
    "169.254.0.0/16",  # IPv4 link-local: the metadata of AWS, GCP, Azure, OCI, DigitalOcean, OpenStack at .169.254
    "fe80::/10",  # IPv6 link-local
    "fd00:ec2::254/128",  # AWS metadata over IPv6
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "168.63.129.16/32",  # Azure's host platform (WireServer)
    "192.0.0.192/32",  # Oracle Cloud Classic metadata
))  # fmt: skip
REFUSED_NAMES = frozenset({
    "metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal",
    "metadata.tencentyun.com",
})  # fmt: skip
# A URL's host and port as a client connects to them: a bracketed IPv6 address or plain ASCII labels.
# Anything else (userinfo, a backslash, percent-escapes, an IPv6 zone, non-ASCII letters that IDNA
# would map onto other ones) is refused rather than read the way one client or another might.
_HOST_PORT = re.compile(r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::[0-9]{1,5})?")
_NUMBER = re.compile(r"0x[0-9a-f]*|[0-9]+")
_DNS_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# Ranges of IPv6 that carry an IPv4 address in their last 32 bits: NAT64, and the deprecated IPv4-compatible.
_LAST_32_BITS = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"))

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def model_host(host: str) -> Address | str:
    """``host`` (a URL's, IPv6 in brackets) as the address or DNS name a client connects to; ValueError if neither.

    A name whose last label is a number is an IPv4 address in any of the forms the C library
    reads (``2852039166``, ``0251.0376.0251.0376``, ``0xa9fea9fe``, ``169.254.43518``), as the
    WHATWG URL standard says. Letters are lowered. A trailing dot is refused: ``localhost.`` or
    ``name.`` is looked up in the DNS where ``localhost`` or ``name`` may be read from /etc/hosts.
    """
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        return ipaddress.IPv6Address(host[1:-1])
    labels = host.split(".")
    if _NUMBER.fullmatch(labels[-1]):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            raise ValueError("not an IPv4 address") from None
    if len(host) > 253 or not all(_DNS_LABEL.fullmatch(label) for label in labels):
        raise ValueError("not a host name")
    return host


def _within(address: Address) -> list[Address]:
    """``address`` and any IPv4 address an IPv6 one carries (mapped, NAT64, 6to4, Teredo, IPv4-compatible)."""
    if isinstance(address, ipaddress.IPv4Address):
        return [address]
    carried = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if any(address in network for network in _LAST_32_BITS):
        carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [address, *(inner for inner in carried if inner is not None)]


def _refused(address: Address) -> bool:
    return any(inner in network for inner in _within(address) for network in REFUSED_NETWORKS)


def _loopback(address: Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def allowed_hosts() -> set[Address | str]:
    """The hosts EEGAB_ALLOWED_API_HOSTS lists, read as ``model_host`` reads a URL's (ImproperlyConfigured if one is not)."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    hosts = set()
    for entry in settings.EEGAB_ALLOWED_API_HOSTS:
        try:
            hosts.add(model_host(entry if ":" not in entry or entry.startswith("[") else f"[{entry}]"))
        except ValueError:
            raise ImproperlyConfigured(f"EEGAB_ALLOWED_API_HOSTS lists {entry!r}, which is not a host name or "
                                       "address (no scheme, port or path).") from None  # fmt: skip
    return hosts


def resolve(name: str) -> list[Address]:
    """The addresses ``name`` resolves to here; none when it does not resolve."""
    try:
        found = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return []
    return [ipaddress.ip_address(sockaddr[0].split("%", 1)[0]) for *_, sockaddr in found]


def check_model_host(url: str) -> None:
    """Refuse an API base that the run form and the environment API may not name (ValueError).

    Its host must be a loopback address (or ``localhost``) or listed in EEGAB_ALLOWED_API_HOSTS,
    and is never a link-local or cloud metadata address (``REFUSED_NETWORKS``, ``REFUSED_NAMES``),
    listed or not, nor a listed name that resolves to one. Only listed names are resolved: a
    name is never allowed for the address it resolves to, which its DNS may change after the
    check. The message does not repeat the URL (it may be stored where visitors read it).
    The command line (``run_benchmark``, ``runs.services.create_run``) is not held to this.
    """
    if not url:
        return
    check_api_base(url)
    if not re.fullmatch(r"[!-~]+", url) or "\\" in url:
        raise ValueError("The API base may hold only printable ASCII characters, no spaces or backslashes.")
    parts = urlsplit(url)
    hostport = _HOST_PORT.fullmatch(parts.netloc.lower())
    if parts.scheme not in ("http", "https") or hostport is None:
        raise ValueError("The API base must be an http(s) URL whose host is a plain host name or IP address.")
    if "?" in url or "#" in url:
        raise ValueError("The API base may have no query or fragment (?, #).")
    try:
        parts.port
    except ValueError:
        raise ValueError("The API base's port is not a port number.") from None
    try:
        host = model_host(hostport["host"])
    except ValueError:
        raise ValueError("The API base's host is neither a host name nor an IP address.") from None
    if host in REFUSED_NAMES or (not isinstance(host, str) and _refused(host)):
        raise ValueError("The API base may not be a link-local or cloud metadata address.")
    if host == "localhost" or (not isinstance(host, str) and _loopback(host)):
        return
    if host not in allowed_hosts():
        raise ValueError("The API base's host is neither a loopback address nor listed in EEGAB_ALLOWED_API_HOSTS.")
    if isinstance(host, str) and any(_refused(address) for address in resolve(host)):
        raise ValueError("The API base's host resolves to a link-local or cloud metadata address.")


def check_transport(model: str, api_base: str | None, requested: str | None = "auto") -> None:
    """Raise ValueError unless ``requested`` is a transport ``model`` at ``api_base`` can use.

    The direct transport speaks the OpenAI format to an ``api_base``, so it needs one and a
    model under the ``openai/`` or ``hosted_vllm/`` prefix.
    """
    if requested not in (*TRANSPORTS, "auto", "", None):
        raise ValueError(f"transport must be 'auto', 'litellm' or 'direct', not {requested!r}.")
    if requested != "direct":
        return
    if not model.startswith(openai_http.PROVIDER_PREFIXES):
        prefixes = " or ".join(openai_http.PROVIDER_PREFIXES)
        raise ValueError(f"The direct transport needs a model under {prefixes} (an OpenAI-compatible server), "
                         f"not {model!r}.")  # fmt: skip
    if not api_base:
        raise ValueError(f"The direct transport needs the --api-base of the server that serves {model}.")
    problem = openai_http.api_base_problem(api_base)
    if problem:
        raise ValueError(problem)


def choose_transport(model: str, api_base: str | None, requested: str = "auto") -> str:
    """``litellm`` or ``direct``: as requested, else direct for a self-hosted OpenAI-compatible model.

    A model is self-hosted when it is served at an ``api_base`` under the ``openai/`` or
    ``hosted_vllm/`` prefix and litellm's model map does not list it (``openai/Qwen3-8B``
    on a vLLM server, say); litellm would only pass its requests through. Every other model
    (a provider's own API, or a listed model such as ``openai/gpt-5`` at a proxy, whose
    parameters litellm adapts) goes through litellm.
    """
    check_transport(model, api_base, requested)
    if requested in TRANSPORTS:
        return requested
    if not api_base or not model.startswith(openai_http.PROVIDER_PREFIXES):
        return "litellm"
    return "litellm" if litellm_model_info(model) is not None else "direct"


def choose_protocol(model: str, requested: str = "auto") -> str:
    """``native`` or ``text``: as requested, else native where litellm says the model calls functions."""
    if requested in PROTOCOLS:
        return requested
    if requested not in ("auto", "", None):
        raise ValueError(f"tool_protocol must be 'auto', 'native' or 'text', not {requested!r}.")
    return "native" if _calls_functions(model) else "text"


@cache
def _calls_functions(model: str) -> bool:
    """Whether litellm's bundled model map says ``model`` supports native function calling."""
    import litellm

    try:
        return bool(litellm.supports_function_calling(model))
    except Exception:  # litellm raises for model strings it cannot map to a provider
        return False
