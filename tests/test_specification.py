"""Behaviours a refactor could break without any other test noticing, each checked against an
independent reference (issue 38's surviving mutations): pairing by prompt key, byte identity of
the two passes, the claims audit's `thinking_graded` cause, matching a logged prompt by its exact
text, the tolerance of a reported headline, loose grading's variants, the cluster bootstrap's
unit (the prompt), and the canary's every sentinel."""

from __future__ import annotations

import json
import re
import random
from pathlib import Path

import numpy as np
import pytest

from conftest import IFEVAL_PROMPTS, REFERENCE_GRADES, read_jsonl
from ifaudit.core.errors import InputError, VerificationError
from ifaudit.core.metrics import score_tables
from ifaudit.core.stats import Resamples, resample_indices
from ifaudit.inputs.importers.model import HarnessLog, HarnessSample
from ifaudit.io.prompts import read_prompts
from ifaudit.steps.grading.analysis import Settings, compare_runs, run_statistics
from ifaudit.steps.grading.canary import check_sentinels, expected_verdicts
from ifaudit.steps.auditing.claims import HarnessVerdicts, explain, headline_mismatches
from ifaudit.steps.auditing.importing import harness_record
from ifaudit.steps.grading.passes import PassOutputs, verify_passes
from ifaudit.tasks.grading import loose_variants
from ifaudit.tasks.registry import TASKS

IFEVAL = TASKS["ifeval"]
CANARIES = Path(__file__).resolve().parents[1] / "src/ifaudit/tasks/canaries"


@pytest.fixture(scope="module")
def prompts():
    return read_prompts(IFEVAL_PROMPTS)


@pytest.fixture(scope="module")
def reference() -> list[dict]:
    return read_jsonl(REFERENCE_GRADES)


# --- paired comparisons pair by prompt key -------------------------------------------------------------


def test_paired_comparison_refuses_the_same_prompts_in_another_order(prompts, reference) -> None:
    """Same length, same keys, other order: pairing row by row would compare prompt i of A with
    another prompt of B, so the comparison is refused rather than paired by position."""
    settings = Settings(resamples=200, seed=1)
    order = list(range(len(prompts)))
    random.Random(7).shuffle(order)
    shuffled = [prompts[i] for i in order]
    by_key = {g["key"]: g for g in reference}
    with pytest.raises(InputError, match="not graded on the same prompts in the same order"):
        compare_runs(IFEVAL, prompts, reference, shuffled, [by_key[p.key] for p in shuffled], settings)


def test_paired_comparison_of_a_run_with_itself_is_zero_whatever_its_order(prompts, reference) -> None:
    settings = Settings(resamples=200, seed=1)
    found = compare_runs(IFEVAL, prompts, reference, prompts, list(reversed(reference)), settings)
    assert all(d["value"] == 0 for d in found["a_minus_b"].values()), found


# --- the two grading passes must be byte-identical -------------------------------------------------------


@pytest.mark.parametrize(
    "second",
    [
        b'{"a":1}\n{"a":2}\n{"a":3}\n{"a":4}\n',  # one line more
        b'{"a":1}\n{"a":2}\n',  # one line fewer
        b'{"a":1}\n{"a":2}\n{"a":3}\n\n',  # a trailing empty line
        b'{"a":1}\n{"a":2}\n{"a":3}',  # the last newline missing
        b'{"a":1}\n{"a":2}\n{"a":3}\n ',  # a trailing byte
        b'{"a":1}\r\n{"a":2}\r\n{"a":3}\r\n',  # other line ends
    ],
    ids=["longer", "shorter", "trailing-empty-line", "no-final-newline", "trailing-byte", "crlf"],
)
def test_grading_passes_differing_in_length_or_trailing_bytes_do_not_agree(tmp_path: Path, second: bytes) -> None:
    first = tmp_path / "a.jsonl"
    first.write_bytes(b'{"a":1}\n{"a":2}\n{"a":3}\n')
    other = tmp_path / "b.jsonl"
    other.write_bytes(second)
    outs = PassOutputs(*(tmp_path / name for name in ("pa.jsonl", "pb.jsonl", "grades.jsonl", "verify.json")))
    with pytest.raises(VerificationError, match="grading passes differ"):
        verify_passes([first], [other], outs)
    assert not any(path.exists() for path in (outs.first, outs.second, outs.grades, outs.record))


# --- the claims audit's causes -----------------------------------------------------------------------------


def test_claims_audit_names_thinking_graded_when_the_harness_graded_the_reasoning(prompts, upstream) -> None:
    """A real IFEval prompt (1000: no commas first) answered with a reasoning block full of commas
    and an answer without any: the pinned grader grades the answer (followed), a harness that
    graded the whole text says not followed, and only the whole text gives its verdict back."""
    prompt = next(p for p in prompts if p.key == 1000)
    assert prompt.instruction_id_list[0] == "punctuation:no_comma"
    response = "<think>First, plan it; then, write it, carefully.</think>An answer without a single comma."
    record = {"key": 1000, "sample": 0, "thinking_stripped": True}
    harness = HarnessVerdicts(1000, 0, {"strict": [False]}, graded_text=None, doc=None)
    cause, detail = explain(upstream, prompt, record, harness, response, "strict", 0, False, set())
    assert cause == "thinking_graded", detail
    # without a reasoning block to strip, the same verdict has no such cause
    record = {**record, "thinking_stripped": False}
    cause, _ = explain(upstream, prompt, record, harness, response, "strict", 0, False, set())
    assert cause != "thinking_graded"


# --- a logged prompt matches a pinned one by its exact text -------------------------------------------------


def _log(doc_prompt: str) -> HarnessLog:
    """A log of one sample under a key the pinned set does not have, naming its prompt by text in
    its copy of the prompt record (the pinned record, its text replaced)."""
    doc = {**read_jsonl(IFEVAL_PROMPTS)[0], "prompt": doc_prompt}
    sample = HarnessSample(key="not-a-key", sample=0, response="Hi.", where="log.jsonl:1", doc=doc)
    return HarnessLog(format="jsonl", tool={"name": "t"}, task="ifeval", model="m", samples=(sample,))


NEAR_MISSES = {
    "leading-space": lambda text: " " + text,
    "trailing-space": lambda text: text + " ",
    "trailing-newline": lambda text: text + "\n",
    "doubled-space": lambda text: text.replace(" ", "  ", 1),
    "no-break-space": lambda text: text.replace(" ", "\u00a0", 1),
}


@pytest.mark.parametrize("near_miss", list(NEAR_MISSES))
def test_logged_prompt_matches_a_pinned_prompt_only_by_its_exact_text(prompts, near_miss: str) -> None:
    pinned = prompts[0].prompt
    text = NEAR_MISSES[near_miss](pinned)
    assert text != pinned
    with pytest.raises(InputError, match="is not in the pinned prompt set"):
        harness_record(_log(text), prompts)
    responses, _ = harness_record(_log(pinned), prompts)
    assert [r["key"] for r in responses] == [prompts[0].key]


# --- a reported headline is the harness's own figure, to the decimals it wrote ---------------------------------


@pytest.mark.parametrize(("decimals", "gap"), [(2, 0.04), (2, 0.01), (3, 0.002), (4, 0.0003)])
def test_reported_headline_off_by_more_than_its_rounding_is_flagged(
    prompts, reference, decimals: int, gap: float
) -> None:
    """A figure written to `decimals` places stands for the interval of its rounding (half a unit of
    its last place); one `gap` away (2 to 8 units of that place) is a claim the harness's own
    verdicts do not support."""
    spec = next(s for s in IFEVAL.metrics if s.name == "prompt_level_strict_acc")
    judged = [
        HarnessVerdicts(
            g["key"], g.get("sample", 0), {m: g[m]["follow_instruction_list"] for m in ("strict", "loose")}, None, None
        )
        for g in reference
    ]
    exact = 417 / 541
    written = round(exact + gap, decimals)
    assert headline_mismatches(prompts, judged, [spec], {spec.name: written}) != {}
    assert headline_mismatches(prompts, judged, [spec], {spec.name: round(exact, decimals)}) == {}
    assert headline_mismatches(prompts, judged, [spec], {spec.name: exact}) == {}


# --- loose grading tries upstream's eight texts ----------------------------------------------------------------


def _upstream_loose(response: str) -> list[str]:
    """Upstream's `test_instruction_following_loose` (evaluation_lib.py at the pinned commit),
    written out again: every `*` removed, first/last/both lines dropped, and combinations."""
    r = response.split("\n")
    response_remove_first = "\n".join(r[1:]).strip()
    response_remove_last = "\n".join(r[:-1]).strip()
    response_remove_both = "\n".join(r[1:-1]).strip()
    revised_response = response.replace("*", "")
    revised_response_remove_first = response_remove_first.replace("*", "")
    revised_response_remove_last = response_remove_last.replace("*", "")
    revised_response_remove_both = response_remove_both.replace("*", "")
    return [
        response,
        revised_response,
        response_remove_first,
        response_remove_last,
        response_remove_both,
        revised_response_remove_first,
        revised_response_remove_last,
        revised_response_remove_both,
    ]


@pytest.mark.parametrize(
    "response",
    ["a *single* star and a lone * here", "**bold** title\nbody * with a star\n*last* line", "one line", "", "\n*\n"],
)
def test_loose_grading_tries_upstreams_eight_texts(response: str) -> None:
    assert loose_variants(response) == _upstream_loose(response)


# --- the cluster bootstrap resamples prompts, not responses ---------------------------------------------------------


def test_bootstrap_resamples_whole_prompts_with_all_their_samples(prompts, reference) -> None:
    """Two samples per prompt (the second flipped at random): every resample draws prompts, each
    with both of its samples. The interval is recomputed here from the drawn prompt indices."""
    rng = random.Random(3)
    second = []
    for g in reference:
        flipped = json.loads(json.dumps(g))
        verdicts = [ok if rng.random() < 0.7 else not ok for ok in g["strict"]["follow_instruction_list"]]
        flipped.update(sample=1, strict={"follow_instruction_list": verdicts, "follow_all_instructions": all(verdicts)})
        second.append(flipped)
    grades = reference + second
    settings = Settings(resamples=400, seed=11)
    stats = run_statistics(IFEVAL, prompts, grades, settings)
    # per prompt: the share of its samples that followed all instructions (strict)
    by_key: dict[int, list[bool]] = {}
    for g in grades:
        by_key.setdefault(g["key"], []).append(g["strict"]["follow_all_instructions"])
    shares = np.array([sum(by_key[p.key]) / len(by_key[p.key]) for p in prompts])
    drawn = resample_indices(settings.seed, settings.resamples, len(prompts))
    replicates = shares[drawn].mean(axis=1)
    low, high = np.percentile(replicates, [2.5, 97.5])
    found = stats["estimates"]["prompt_level_strict_acc"]
    assert found["value"] == pytest.approx(shares.mean(), abs=1e-12)
    assert (found["ci_low"], found["ci_high"]) == pytest.approx((low, high), abs=2 / len(prompts))
    # and the draws are whole prompts: a resample's weight is per prompt, counted once
    counts = Resamples.draw(settings.seed, settings.resamples, len(prompts)).counts
    assert counts.shape == (settings.resamples, len(prompts)) and (counts.sum(axis=1) == len(prompts)).all()
    table = score_tables(prompts, grades, IFEVAL.metrics)["prompt_level_strict_acc"]
    assert len(table.keys) == len(prompts)


# --- the canary checks every sentinel ---------------------------------------------------------------------------


def _sentinel_cases() -> list[tuple[str, int]]:
    cases = []
    for path in sorted(CANARIES.glob("*.json")):
        for index, _ in enumerate(json.loads(path.read_text()).get("sentinels", [])):
            cases.append((path.stem, index))
    return cases


@pytest.mark.parametrize(("canary_name", "index"), _sentinel_cases())
def test_canary_names_a_flip_of_any_one_sentinel_first_to_last(canary_name: str, index: int) -> None:
    """A grader that gives every sentinel its expected verdicts except sentinel `index`, whose
    first verdict it flips: the canary names exactly that sentinel."""
    canary = json.loads((CANARIES / f"{canary_name}.json").read_text())
    unicode = "14.0.0"
    target = canary["sentinels"][index]

    def grade(prompt, response) -> dict:
        sentinel = canary["sentinels"][response.line - 1]  # check_sentinels numbers them from 1
        expected = expected_verdicts(sentinel, unicode)
        graded = {}
        for mode, verdicts in expected.items():
            if sentinel is target:
                verdicts = (not verdicts) if mode == "gate" else [not verdicts[0], *verdicts[1:]]
            graded[mode] = {"passed": verdicts} if mode == "gate" else {"follow_instruction_list": verdicts}
        return graded

    flips = check_sentinels(canary, grade, unicode)
    assert {flip["sentinel"] for flip in flips} == {target["name"]}


# --- the bundle's checksum layer, on its own --------------------------------------------------------------------


@pytest.mark.parametrize(
    "edited", ["results/gpt4_google/summary.json", "project/config/config.yaml", "data/responses.jsonl", "BUNDLE.json"]
)
def test_bundle_checksum_layer_refuses_any_file_changed_after_packing(tmp_path: Path, edited: str) -> None:
    """A bundle folder with its checksum list as `ifaudit bundle` writes it; one file edited and
    the list left as it was: the checksum layer alone names that file, wherever it lies."""
    from ifaudit.steps.artifact.bundle import CHECKSUMS, checksum_lines, tree_files
    from ifaudit.steps.artifact.bundle_verify import check_checksums

    names = ["results/gpt4_google/summary.json", "project/config/config.yaml", "data/responses.jsonl", "BUNDLE.json"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"the bytes of {name}\n")
    (tmp_path / CHECKSUMS).write_bytes(checksum_lines(tmp_path, tree_files(tmp_path)))
    assert check_checksums(tmp_path, names) == len(names)
    (tmp_path / edited).write_text("other bytes\n")
    with pytest.raises(
        VerificationError,
        match=rf"does not verify: {re.escape(edited)}: its bytes now have sha256 [0-9a-f]{{64}}; "
        rf"CHECKSUMS\.sha256 records [0-9a-f]{{64}}",
    ):
        check_checksums(tmp_path, names)
