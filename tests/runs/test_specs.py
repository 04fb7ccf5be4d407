"""Model specs: a model string's spec found or created, a paper model given its string, a taken name refused."""
import pytest

from benchmark.models import ModelSpec
from runs import specs


@pytest.mark.django_db
def test_model_spec_for_reuses_a_spec_of_the_model_and_refuses_a_name_taken_by_another():
    ModelSpec.objects.create(name="GPT-4o", provider_model="openai/gpt-4o")
    assert specs.model_spec_for("openai/gpt-4o").name == "GPT-4o"
    assert specs.model_spec_for("openai/gpt-4o", name="GPT-4o").name == "GPT-4o"
    with pytest.raises(ValueError, match="already used for openai/gpt-4o"):
        specs.model_spec_for("openai/gpt-4o-mini", name="GPT-4o")
    assert specs.model_spec_for("baseline/heuristic").is_open_weight is True


@pytest.mark.django_db
def test_a_paper_model_without_a_model_string_takes_the_one_given_with_its_name():
    paper = ModelSpec.objects.create(name="GPT-5.5", provider_model="", family="OpenAI")
    assert specs.model_spec_for("openai/gpt-5.5", name="GPT-5.5") == paper
    paper.refresh_from_db()
    assert paper.provider_model == "openai/gpt-5.5" and paper.family == "OpenAI"
    with pytest.raises(ValueError, match="already used for openai/gpt-5.5"):
        specs.model_spec_for("openai/gpt-5.4", name="GPT-5.5")
    other = ModelSpec.objects.create(name="GPT-5.4", provider_model="")
    with pytest.raises(ValueError, match="Unknown model"):  # a string litellm cannot route is not kept
        specs.model_spec_for("not a model", name="GPT-5.4")
    other.refresh_from_db()
    assert other.provider_model == ""
