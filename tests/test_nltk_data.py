"""The punkt_tab resolver: mirror into cache, cache reuse, clear failure, hashes recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import NLTK_MIRROR
from ifaudit.core.errors import InputError
from ifaudit.io.remote.nltk_data import resolve_punkt

# shared/data/nltk/PROVENANCE.md
ORTHO_CONTEXT_SHA256 = "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c"


@pytest.fixture
def clean_nltk_path(monkeypatch: pytest.MonkeyPatch):
    import nltk

    monkeypatch.setattr(nltk.data, "path", [])
    return nltk.data.path


def test_mirror_is_copied_into_the_cache_then_reused(clean_nltk_path, tmp_path: Path) -> None:
    first = resolve_punkt(tmp_path / "cache", NLTK_MIRROR, allow_download=False)
    assert first.origin == "mirror"
    assert first.sha256["tokenizers/punkt_tab/english/ortho_context.tab"] == ORTHO_CONTEXT_SHA256
    clean_nltk_path.clear()
    second = resolve_punkt(tmp_path / "cache", None, allow_download=False)
    assert second.origin == "cache" and second.sha256 == first.sha256
    import nltk

    assert nltk.sent_tokenize("Dr. Smith arrived. He sat down.") == ["Dr. Smith arrived.", "He sat down."]


def test_missing_data_is_a_clear_error(clean_nltk_path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IFAUDIT_NLTK_MIRROR", raising=False)
    with pytest.raises(InputError, match="punkt_tab not found"):
        resolve_punkt(tmp_path / "cache", None, allow_download=False)
    with pytest.raises(InputError, match="mirror has no tokenizers/punkt_tab/english"):
        resolve_punkt(tmp_path / "cache", tmp_path, allow_download=False)
