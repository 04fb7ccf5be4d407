"""A staff form cannot send a secret of the server anywhere, and a run's API base stays with staff."""
import pytest
from django.urls import reverse

from benchmark.models import ModelSpec
from runs.model.agent import ModelAgent
from runs.model.reply import ProviderError
from runs.models import Run
from runs.services import create_run

pytestmark = pytest.mark.django_db


def form(suite, **overrides):
    spec = ModelSpec.objects.get_or_create(name="Some model", provider_model="openai/some-model")[0]
    return {"model": spec.pk, "suite": suite.pk, "tasks": ["T1"], "limit": "1", "concurrency": "1",
            "api_key_env": "OPENAI_API_KEY", "name": "attack", "prompt_set": "platform", "tool_protocol": "text",
            "temperature": "0", "max_tokens": "8192", **overrides}  # fmt: skip


@pytest.mark.parametrize("name, message", [
    ("SECRET_KEY", "SECRET_KEY is a setting of the platform"),
    ("DATABASE_URL", "DATABASE_URL is a setting of the platform"),
    ("REDIS_URL", "REDIS_URL is a setting of the platform"),
    ("EEGAB_ENV_API_RATE", "is a setting of the platform"),
    ("DJANGO_SETTINGS_MODULE", "is a setting of the platform"),
    ("HOME", "HOME is not a key variable runs may name"),
    ("sk-live-1234", "Give the name of the environment variable"),
])
def test_the_run_form_refuses_a_variable_that_is_not_a_providers_key(client, staff_user, suite, name, message):
    client.force_login(staff_user)
    response = client.post(reverse("leaderboard:new_run"), form(suite, api_key_env=name))
    assert response.status_code == 200
    assert message in " ".join(response.context["form"].errors["api_key_env"])
    assert "sk-live-1234" not in response.content.decode().split("errorlist", 1)[-1].split("</ul>", 1)[0]
    assert not Run.objects.exists()


@pytest.mark.parametrize("base", ["https://user:pass@evil.example/v1", "https://token@evil.example/v1"])
def test_the_run_form_refuses_an_api_base_with_credentials(client, staff_user, suite, base):
    client.force_login(staff_user)
    response = client.post(reverse("leaderboard:new_run"), form(suite, api_base=base))
    errors = " ".join(response.context["form"].errors["api_base"])
    assert "may not hold credentials" in errors and "evil.example" not in errors and "pass@" not in errors
    assert not Run.objects.exists()


def test_every_way_of_creating_a_run_holds_the_same_rules(suite, model_spec):
    for options, message in [({"api_key_env": "SECRET_KEY"}, "setting of the platform"),
                             ({"api_base": "https://a:b@x.example/v1"}, "credentials")]:  # fmt: skip
        with pytest.raises(ValueError, match=message):
            create_run(suite=suite, model=model_spec, tasks=["T1"], **options)
    assert not Run.objects.exists()


def test_a_stored_run_naming_a_platform_setting_gets_no_key_at_call_time(monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "the server's secret")
    agent = ModelAgent(model="openai/some-model", api_base="https://x.example/v1", api_key_env="SECRET_KEY")
    with pytest.raises(ProviderError, match="setting of the platform"):
        agent._api_key()


def test_a_runs_api_base_is_shown_to_staff_only(client, staff_user, suite, model_spec):
    run = create_run(suite=suite, model=model_spec, tasks=["T1"], api_base="https://models.internal.example/v1",
                     api_key_env="OPENAI_API_KEY")  # fmt: skip
    for url in (reverse("leaderboard:run", args=[run.pk]), f"/api/runs/{run.pk}/", "/api/runs/"):
        assert "models.internal.example" not in client.get(url).content.decode(), url
    client.force_login(staff_user)
    assert "models.internal.example" in client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
