"""A run from the staff form calls its model only on loopback or a host the operator listed, never a metadata address.

Each URL below is one way an attacker holding a staff session (or a careless staff member) could
point the workers, and the key they send, at the cloud's metadata service or a host of their own.
"""
import socket

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from benchmark.models import ModelSpec
from runs.agents import build_agent
from runs.model import routing
from runs.model.agent import ModelAgent
from runs.model.reply import ProviderError
from runs.models import Run
from runs.services import create_run
from tests.security.test_keys import form

pytestmark = pytest.mark.django_db

METADATA = "link-local or cloud metadata address"
UNLISTED = "neither a loopback address nor listed in EEGAB_ALLOWED_API_HOSTS"
NOT_A_HOST = "neither a host name nor an IP address"
NOT_PLAIN = "plain host name or IP address"
# Listing the metadata service does not let a run name it.
LISTED = "models.example.org,169.254.169.254,fd00:ec2::254,metadata.google.internal,100.100.100.200,10.0.0.5"

REFUSED = [
    ("http://169.254.169.254/latest/meta-data/", METADATA),
    ("http://2852039166/", METADATA),  # 169.254.169.254 as one decimal number
    ("http://0251.0376.0251.0376/", METADATA),  # in octal
    ("http://0xa9fea9fe/", METADATA),  # in hexadecimal
    ("http://0xA9.254.0251.254/", METADATA),  # mixed, upper case
    ("http://169.254.43518/", METADATA),  # the last two bytes as one number
    ("http://[::ffff:169.254.169.254]/", METADATA),  # IPv4-mapped IPv6
    ("http://[::ffff:a9fe:a9fe]/", METADATA),
    ("http://[64:ff9b::a9fe:a9fe]/", METADATA),  # NAT64
    ("http://[2002:a9fe:a9fe::1]/", METADATA),  # 6to4
    ("http://[::a9fe:a9fe]/", METADATA),  # IPv4-compatible
    ("http://[fe80::1]:8000/v1", METADATA),  # IPv6 link-local
    ("http://[fd00:ec2::254]/latest/", METADATA),  # AWS metadata over IPv6
    ("http://169.254.170.2/v2/credentials", METADATA),  # ECS task credentials
    ("http://100.100.100.200/latest/meta-data/", METADATA),  # Alibaba Cloud
    ("http://metadata.google.internal/computeMetadata/v1/", METADATA),
    ("http://METADATA.Google.Internal:80/", METADATA),
    ("http://metadata/computeMetadata/v1/", METADATA),  # the short name GCP's search domain completes
    ("http://metadata.google.internal./", NOT_A_HOST),  # a trailing dot
    ("http://127.0.0.1./v1", NOT_A_HOST),
    ("http://localhost./v1", NOT_A_HOST),  # looked up in the DNS, not /etc/hosts
    ("http://[fe80::1%25eth0]/", NOT_PLAIN),  # an IPv6 zone
    ("http://%31%36%39.254.169.254/", NOT_PLAIN),  # percent-escapes
    ("http://169.254.169.254\\@127.0.0.1/", "may not hold credentials"),  # a backslash, read as / by browsers
    ("http://127.0.0.1\\.evil.example/", "printable ASCII"),
    ("http://ⓜetadata.google.internal/", "printable ASCII"),  # IDNA maps ⓜ to m
    ("http://127.0.0.1\t.evil.example/", "printable ASCII"),
    ("http://127.0.0.1#@evil.example/v1", "no query or fragment"),
    ("http://127.0.0.1?@evil.example/v1", "no query or fragment"),
    ("http://127.0.0.1:99999/v1", "not a port number"),
    ("http://user@127.0.0.1/", "may not hold credentials"),
    ("http://evil.example:443@127.0.0.1/", "may not hold credentials"),
    ("https://evil.example/v1", UNLISTED),
    ("https://127.0.0.1.nip.io/v1", UNLISTED),  # a name that resolves to loopback is not loopback (rebinding)
    ("https://models.example.org.evil.example/v1", UNLISTED),
    ("http://010.0.0.5/v1", UNLISTED),  # 8.0.0.5 (octal), as the C library reads it, not the listed 10.0.0.5
    ("http://0.0.0.0:8000/v1", UNLISTED),
    ("http://[::]:8000/v1", UNLISTED),
    ("http://1.2.3.999/v1", NOT_A_HOST),
]  # fmt: skip

ALLOWED_ON_THE_FORM = [
    "http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "http://LOCALHOST:8000/v1", "http://[::1]:8000/v1",
    "http://127.8.9.10/v1", "https://models.example.org/v1", "https://MODELS.example.org:8443/v1",
    "http://10.0.0.5/v1", "",
]  # fmt: skip
# Loopback too, in forms Django's URL field refuses but the environment API's callers may send.
ALLOWED = [*ALLOWED_ON_THE_FORM, "http://127.1/v1", "http://2130706433/v1", "http://[::ffff:127.0.0.1]/v1"]


@pytest.fixture(autouse=True)
def listed(settings):
    settings.EEGAB_ALLOWED_API_HOSTS = LISTED.split(",")


@pytest.fixture
def dns(monkeypatch):
    """Names resolve as ``dns`` (a dict) says, nothing else resolves; returns the lookups made."""
    table, looked_up = {"models.example.org": ["203.0.113.7"]}, []

    def getaddrinfo(host, port, *args, **kwargs):
        looked_up.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, 0))
                for ip in table[host]]  # fmt: skip

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table, looked_up


@pytest.mark.parametrize("url, message", REFUSED)
def test_the_run_form_refuses_the_host(client, staff_user, suite, dns, url, message):
    """Django's URL field refuses some of these first ("Enter a valid URL."); the shared check refuses them all."""
    client.force_login(staff_user)
    response = client.post(reverse("leaderboard:new_run"), form(suite, api_base=url))
    assert response.status_code == 200 and response.context["form"].errors["api_base"]
    assert not Run.objects.exists()


@pytest.mark.parametrize("url, message", REFUSED)
def test_the_shared_check_refuses_the_host_and_never_repeats_it(dns, url, message):
    with pytest.raises(ValueError, match=message) as refused:
        routing.check_model_host(url)
    assert "evil" not in str(refused.value) and "169.254" not in str(refused.value)


@pytest.mark.parametrize("url", ALLOWED)
def test_the_shared_check_allows_loopback_and_listed_hosts(dns, url):
    routing.check_model_host(url)


@pytest.mark.parametrize("url", ALLOWED_ON_THE_FORM)
def test_the_run_form_takes_loopback_and_listed_hosts(client, staff_user, suite, dns, url):
    client.force_login(staff_user)
    response = client.post(reverse("leaderboard:new_run"), form(suite, api_base=url))
    assert response.status_code == 302, response.context["form"].errors
    assert Run.objects.get().api_base == url


def test_only_listed_names_are_resolved(dns):
    _, looked_up = dns
    for url in ("http://localhost:8000/v1", "https://evil.example/v1", "https://models.example.org/v1"):
        try:
            routing.check_model_host(url)
        except ValueError:
            pass
    assert looked_up == ["models.example.org"]


@pytest.mark.parametrize("addresses", [["169.254.169.254"], ["203.0.113.7", "fe80::1"], ["::ffff:169.254.169.254"]])
def test_a_listed_name_that_resolves_to_a_metadata_address_is_refused(dns, addresses):
    table, _ = dns
    table["models.example.org"] = addresses
    with pytest.raises(ValueError, match="resolves to a link-local or cloud metadata address"):
        routing.check_model_host("https://models.example.org/v1")


def test_a_listed_name_that_does_not_resolve_here_is_allowed(dns):
    """Nothing can be reached there; the call fails as any unreachable host does, and is retried as such."""
    dns[0].clear()
    routing.check_model_host("https://models.example.org/v1")


@pytest.mark.parametrize("entry", ["https://models.example.org", "models.example.org:8443", "bad_name", "a b"])
def test_a_listed_entry_that_is_not_a_host_stops_the_check(settings, entry):
    from django.core.exceptions import ImproperlyConfigured

    settings.EEGAB_ALLOWED_API_HOSTS = [entry]
    with pytest.raises(ImproperlyConfigured, match="EEGAB_ALLOWED_API_HOSTS lists"):
        routing.check_model_host("https://models.example.org/v1")


def test_the_command_line_stays_free(suite, dns):
    """Its user already holds the keys: create_run (run_benchmark's service) takes any host but credentials."""
    model = ModelSpec.objects.create(name="m", provider_model="openai/m")
    run = create_run(suite=suite, model=model, tasks=["T1"], api_base="https://evil.example/v1",
                     api_key_env="OPENAI_API_KEY")  # fmt: skip
    assert run.api_base == "https://evil.example/v1"
    assert build_agent(run, run.episodes.get().instance).allowed_hosts_only is False


def test_the_environment_api_takes_no_api_base(client, staff_user, suite):
    """An external run's agent calls its own model: an api_base in the body never reaches a run."""
    api = APIClient()
    api.force_login(staff_user)
    body = {"agent": "mine", "suite": suite.name, "tasks": ["T1"], "api_base": "http://169.254.169.254/"}
    response = api.post(reverse("env:runs"), body, format="json")
    assert response.status_code in (201, 400)
    assert not Run.objects.exclude(api_base="").exists()


def run_from_the_form(client, staff_user, suite, api_base):
    client.force_login(staff_user)
    assert client.post(reverse("leaderboard:new_run"), form(suite, api_base=api_base)).status_code == 302
    return Run.objects.get()


def test_a_form_run_whose_host_is_no_longer_listed_sends_nothing_when_played(
    client, staff_user, suite, dns, settings, monkeypatch
):
    run = run_from_the_form(client, staff_user, suite, "https://models.example.org/v1")
    agent = build_agent(run, run.episodes.get().instance)
    assert agent.allowed_hosts_only is True
    sent = []
    monkeypatch.setattr(ModelAgent, "_complete", lambda self, request: sent.append(request))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-real-key")
    settings.EEGAB_ALLOWED_API_HOSTS = []  # the operator takes the host off the list
    with pytest.raises(ProviderError, match=UNLISTED):
        agent.respond([{"role": "user", "content": "hi"}])
    dns[0]["models.example.org"] = ["169.254.169.254"]  # or its DNS now points at the metadata service
    settings.EEGAB_ALLOWED_API_HOSTS = ["models.example.org"]
    with pytest.raises(ProviderError, match="resolves to a link-local"):
        agent.respond([{"role": "user", "content": "hi"}])
    assert sent == []


def test_the_admin_cannot_change_where_a_run_sends_its_key(client, staff_user, suite):
    """The admin's run page shows the API base, the key's variable and the creator, and a POST changes none."""
    run = create_run(
        suite=suite, model=ModelSpec.objects.create(name="m", provider_model="openai/m"), tasks=["T1"],
        api_base="http://127.0.0.1:8000/v1", created_by=staff_user)
    client.force_login(staff_user)
    url = reverse("admin:runs_run_change", args=[run.pk])
    page = client.get(url).content.decode()
    assert 'name="api_base"' not in page and 'name="api_key_env"' not in page and "127.0.0.1:8000" in page
    body = {"name": run.name, "model": run.model_id, "suite": suite.pk, "status": run.status, "source": run.source,
            "api_base": "http://169.254.169.254/", "api_key_env": "AWS_SECRET_ACCESS_KEY", "settings": "{}",
            "limits": "{}", "epochs": 1, "seed": 0}
    client.post(url, body)
    run.refresh_from_db()
    assert (run.api_base, run.api_key_env, run.created_by) == ("http://127.0.0.1:8000/v1", "", staff_user)
