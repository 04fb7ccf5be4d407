"""Admin: every model of the benchmark and runs apps is registered, listed and viewable by staff."""
import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from runs.environment.service import open_external_run
from runs.models import Step
from runs.services import append_step

ADMINISTERED_APPS = ("benchmark", "runs")
MODELS = [model for label in ADMINISTERED_APPS for model in apps.get_app_config(label).get_models()]


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


@pytest.fixture
def populated(run):
    """At least one row of every administered model."""
    episode = run.episodes.get(instance__task__code="T2")
    append_step(episode=episode, kind=Step.Kind.PROMPT, text="prompt")
    append_step(episode=episode, kind=Step.Kind.TOOL_CALL, tool_name="compute_psd", arguments={}, result={})
    open_external_run(agent="external agent", suite=run.suite, tasks=["T1"])
    return run


def test_every_model_is_registered():
    unregistered = [model.__name__ for model in MODELS if model not in admin.site._registry]
    assert unregistered == []


@pytest.mark.django_db
def test_admin_index_lists_every_model(staff_client):
    page = staff_client.get(reverse("admin:index")).content.decode()
    missing = [model.__name__ for model in MODELS if admin_url(model, "changelist") not in page]
    assert missing == []


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model._meta.label)
def test_changelist_and_change_pages_load(staff_client, populated, model):
    assert staff_client.get(admin_url(model, "changelist")).status_code == 200
    obj = model.objects.first()
    assert staff_client.get(admin_url(model, "change", obj.pk)).status_code == 200


@pytest.mark.django_db
def test_steps_cannot_be_added_edited_or_deleted_in_the_admin(staff_client, populated):
    step = Step.objects.first()
    page = staff_client.get(admin_url(Step, "change", step.pk)).content.decode()
    assert 'name="_save"' not in page
    assert staff_client.get(admin_url(Step, "add")).status_code == 403
    assert staff_client.get(admin_url(Step, "delete", step.pk)).status_code == 403


@pytest.mark.django_db
def test_visitors_are_sent_to_the_admin_login(client, visitor):
    client.force_login(visitor)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]
