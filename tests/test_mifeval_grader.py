"""M-IFEval's loader reads the pinned source before it stands anything in: spaCy only where no
checker of the graded language can reach it (French, Japanese), refused otherwise (Spanish,
naming the two models its source loads); the stand-in's models refuse any use; a registry entry
of the language graded by another module's class is refused. Read from the mirror, nothing
imported (fast)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO, SHARED
from ifaudit.core.errors import InputError, VerificationError
from ifaudit.io.remote.pins import load_pin
from ifaudit.tasks import mifeval_grader
from ifaudit.tasks.mifeval_grader import UnpinnedModel, closure, language_instructions, pinned_modules, spacy_free

PIN = load_pin(REPO / "vendor" / "lightblue_mifeval" / "pin.toml")
MIRROR = SHARED / "upstream" / "lightblue_mifeval" / PIN.commit


@pytest.fixture(scope="module")
def modules() -> dict[str, ast.Module]:
    return pinned_modules(PIN, MIRROR)


@pytest.mark.parametrize("language", ["fr", "ja", "en"])
def test_spacy_is_stood_in_only_for_a_language_whose_checkers_never_reach_it(
    modules: dict[str, ast.Module], language: str
) -> None:
    reached = closure(modules, f"instructions.{language}_instructions")
    assert reached == [f"instructions.{language}_instructions", f"instruction_utils.{language}_instructions_util"]
    assert spacy_free(modules, language) is True  # some other pinned module imports spaCy: stood in


def test_spanish_is_refused_naming_both_spacy_models(modules: dict[str, ast.Module]) -> None:
    with pytest.raises(InputError) as refused:
        spacy_free(modules, "es")
    message = str(refused.value)
    assert "xx_sent_ud_sm" in message and "es_core_news_sm" in message
    assert "instructions/es_instructions.py" in message and "instruction_utils/es_instructions_util.py" in message
    assert "\n" not in message


def test_the_spanish_task_declares_the_models_its_source_loads(modules: dict[str, ast.Module]) -> None:
    from ifaudit.tasks.mifeval import MIFEVAL_ES, MIFEVAL_FR, MIFEVAL_JA

    loaded = {model for tree in modules.values() for model in mifeval_grader.spacy_models(tree)}
    assert sorted(MIFEVAL_ES.unpinned_models) == sorted(loaded) == ["es_core_news_sm", "xx_sent_ud_sm"]
    refusal = MIFEVAL_ES.refusal()
    assert refusal is not None and "es_core_news_sm and xx_sent_ud_sm" in refusal and "\n" not in refusal
    assert MIFEVAL_FR.refusal() is None and MIFEVAL_JA.refusal() is None


def test_a_french_checker_that_used_spacy_would_be_refused(modules: dict[str, ast.Module]) -> None:
    changed = dict(modules)
    changed["instruction_utils.fr_instructions_util"] = ast.parse("import spacy\nnlp = spacy.load('fr_core_news_sm')\n")
    with pytest.raises(InputError, match="fr_core_news_sm"):
        spacy_free(changed, "fr")


def test_the_stand_in_model_refuses_any_use() -> None:
    model = UnpinnedModel("es_core_news_sm")
    with pytest.raises(VerificationError, match="es_core_news_sm"):
        model("texto")
    with pytest.raises(VerificationError, match="es_core_news_sm"):
        _ = model.pipe_names


def test_the_registry_is_cut_to_the_language_and_its_own_module() -> None:
    own = type("Checker", (), {"__module__": "instructions.fr_instructions"})
    other = type("Checker", (), {"__module__": "instructions.es_instructions"})
    assert language_instructions({"fr:a": own, "es:a": other}, "fr") == {"fr:a": own}
    with pytest.raises(VerificationError, match="fr:b"):
        language_instructions({"fr:a": own, "fr:b": other}, "fr")


def test_the_pin_lists_every_module_the_registry_imports(modules: dict[str, ast.Module]) -> None:
    imported = closure(modules, mifeval_grader.REGISTRY_MODULE)
    assert sorted(imported) == sorted(name for name in modules if name != "evaluation_main")
    assert all(Path(MIRROR, file.path).stat().st_size == file.size for file in PIN.files)
