"""Model specs: a model string's spec found or created, a name taken by another model refused."""
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
