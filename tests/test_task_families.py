"""Every task of the registry graded in this process, in the fast subset: each family's grader
(Google's pinned grader, the language gates, both Arabic variants, InFoBench's verdicts, IFBench
at both pins) grades real prompts and gives the verdicts an independent source gives them:
upstream's own committed results, the project's checker and gate vectors, the judge's verdicts.

tests/test_suite_guards.py checks that FAMILIES names every task of the registry."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import DATA, GPT4_RESPONSES, IFEVAL_PROMPTS, REFERENCE_GRADES, read_jsonl
from grader_fixtures import IfbenchGraders
from test_arabic_checkers import NLTK_GE_3_10
from test_arabic_hf_checkers import CASES as HF_CASES

from ifaudit.core.records import Prompt, Response
from ifaudit.tasks.grading import grade_response
from ifaudit.tasks.registry import TASKS

ARABIC = DATA / "arabic_ifeval"
IFBENCH_DATA = DATA / "ifbench"
ENGLISH = "The quick brown fox jumps over the lazy dog. It was a calm and sunny morning in the valley."


def _arabic_vector(vectors: str, wanted: Callable[[dict], bool]) -> dict:
    return next(row for row in read_jsonl(ARABIC / vectors) if wanted(row))


def _ifeval(request: pytest.FixtureRequest, name: str) -> None:
    """The first 8 GPT-4 responses graded as upstream's own output (the reference grades); the
    gated task's gate passes GPT-4's English and refuses an Arabic paragraph."""
    registry, task = request.getfixturevalue("upstream"), TASKS[name]
    prompts = task.read_prompts(IFEVAL_PROMPTS)[:8]
    by_text = {row["prompt"]: row["response"] for row in read_jsonl(GPT4_RESPONSES)}
    reference = {row["key"]: row for row in read_jsonl(REFERENCE_GRADES)}
    for prompt in prompts:
        record = grade_response(registry, task, prompt, Response(prompt.key, 0, by_text[prompt.prompt], 1))
        for mode in ("strict", "loose"):
            assert record[mode] == reference[prompt.key][mode], (prompt.key, mode)
        assert ("gate" in record) is (task.gate is not None)
    if task.gate is not None:
        arabic = _arabic_vector("gate_vectors.jsonl", lambda row: row["expected_gate"])["response"]
        assert task.gate.verdict(prompts[0], ENGLISH).passed
        assert not task.gate.verdict(prompts[0], arabic).passed


def strict_stage(vector: dict) -> bool:
    """A checker vector's verdict on the cleaned text (NLTK 3.10 tokenizes `\\w+` with the
    `regex` engine, where tashkeel stays inside words: test_arabic_checkers.expected_verdict)."""
    if NLTK_GE_3_10:
        return vector.get("expected_if_nltk_ge_3_10", {}).get("expected_strict_stage", vector["expected_strict_stage"])
    return vector["expected_strict_stage"]


def _arabic(request: pytest.FixtureRequest, name: str) -> None:
    """The project's checker vectors (both variants' registries) and gate vectors (Inception's
    gate by each vector's expectation; the Hugging Face gate passes Arabic, refuses English)."""
    from ifaudit.tasks.graders import load_own

    task = TASKS[name]
    registry = load_own(task.registry)
    if task.clean:  # Inception's registry: checker vectors' verdicts after the strict stage's cleaning
        vectors = read_jsonl(ARABIC / "checker_vectors.jsonl")
        cases = [
            (row["id"], row["instruction_id"], row["kwargs"], row["response"], strict_stage(row))
            for index, row in enumerate(vectors)
            if index % 10 == 0 or row["expected_strict_stage"] != row["expected"]  # where cleaning decides
        ]
    else:  # the Hugging Face copy's registry: its own cases
        cases = [case[:5] for case in HF_CASES if case[3].strip()]  # the driver fails an empty text itself
    for case_id, instruction_id, kwargs, text, expected in cases:
        prompt = Prompt(1, "(vector)", (instruction_id,), (kwargs,), "checker_vectors.jsonl", 1, ("ar",))
        record = grade_response(registry, task, prompt, Response(1, 0, text, 1))
        assert record["strict"]["follow_instruction_list"] == [expected], case_id
    if task.clean:
        gates = [row for row in read_jsonl(ARABIC / "gate_vectors.jsonl")][:8]
        for row in gates:
            prompt = Prompt(1, "(vector)", (), (), "gate_vectors.jsonl", 1, tuple(row["lang"]))
            record = grade_response(registry, task, prompt, Response(1, 0, row["response"], 1))
            assert record["gate"]["passed"] is row["expected_gate"], row["id"]
    elif task.gate is not None:
        arabic = _arabic_vector("gate_vectors.jsonl", lambda row: row["expected_gate"])["response"]
        prompt = Prompt(1, "(vector)", (), (), "gate_vectors.jsonl", 1, ("ar",))
        assert task.gate.verdict(prompt, arabic).passed
        assert not task.gate.verdict(prompt, ENGLISH).passed


def _infobench(request: pytest.FixtureRequest, name: str) -> None:
    """GPT-4's answers with the GPT-4 judge's recorded verdicts: each question's verdict is the
    judge's, in order (InFoBench grades no text itself)."""
    from ifaudit.core.identity import GraderIdentity, GraderKind
    from ifaudit.io.canonical import sha256_bytes
    from ifaudit.judging.infobench import grade_infobench, read_infobench

    prompts = read_infobench(DATA / "infobench" / "InfoBench.json")[:3]
    judged = {row["id"]: row for row in read_jsonl(DATA / "infobench" / "gpt4_output_gpt4judge_DecomposeEval.jsonl")}
    responses, verdicts = [], {}
    for prompt in prompts:
        row = judged[prompt.key]
        responses.append(Response(prompt.key, 0, row["output"], 1))
        answers = [answer == "YES" for answer in row["eval"]]
        verdicts[(prompt.key, 0)] = {
            "answers": None,
            "response_sha256": sha256_bytes(row["output"].encode()),
            "verdicts": answers,
        }
    grades = grade_infobench(
        name, GraderIdentity(GraderKind.IMPORTED, "judge.jsonl", "0"), prompts, responses, verdicts
    )
    assert [g["strict"]["follow_instruction_list"] for g in grades] == [
        verdicts[(p.key, 0)]["verdicts"] for p in prompts
    ]


# IFBench's one verdict that moved between the pins on the 294 sample outputs (FACTS.md §11):
# key 163's `ratio:sentence_type`, when sentence splitting moved to NLTK.
MOVED_AT_DB69A6F = "163"
PINS = {"ifbench": "c6767a1", "ifbench_db69a6f": "db69a6f"}  # each task's version of IFBench's pin


def _ifbench(request: pytest.FixtureRequest, name: str) -> None:
    """Upstream's sample outputs to the first 6 prompts and key 163, graded as upstream's own
    committed results (c6767a1): equal at c6767a1; at db69a6f equal but for key 163, strict and loose."""
    graders: IfbenchGraders = request.getfixturevalue("ifbench_graders")
    task, version = TASKS[name], PINS[name]
    assert task.pin(graders.options(None)).version == version  # the task's own version, unasked
    prompts = task.read_prompts(IFBENCH_DATA / "IFBench_test_294.jsonl")
    chosen = prompts[:6] + [p for p in prompts if p.key == MOVED_AT_DB69A6F]
    outputs = {row["prompt"].strip(): row["response"] for row in read_jsonl(IFBENCH_DATA / "sample_output.jsonl")}
    committed = {
        mode: {
            row["prompt"].strip(): row["follow_instruction_list"]
            for row in read_jsonl(IFBENCH_DATA / f"eval_results_{mode}.jsonl")
        }
        for mode in ("strict", "loose")
    }
    moved = []
    for prompt in chosen:
        response = Response(prompt.key, 0, outputs[prompt.prompt.strip()], 1)
        record = grade_response(graders.registries[version], task, prompt, response)
        assert record["grader"]["version"].startswith(version)
        for mode in ("strict", "loose"):
            if record[mode]["follow_instruction_list"] != committed[mode][prompt.prompt.strip()]:
                moved.append((prompt.key, mode))
    assert moved == ([] if version == "c6767a1" else [(MOVED_AT_DB69A6F, "strict"), (MOVED_AT_DB69A6F, "loose")])


FAMILIES: dict[str, Callable[[pytest.FixtureRequest, str], None]] = {
    "ifeval": _ifeval,
    "ifeval_langcheck": _ifeval,
    "ifeval_arabic_inception_hf": _arabic,
    "ifeval_arabic_inception_hf_langcheck": _arabic,
    "ifeval_arabic_inception": _arabic,
    "infobench": _infobench,
    "ifbench": _ifbench,
    "ifbench_db69a6f": _ifbench,
}


# Tasks graded in process by a fast test of their own module (M-IFEval's, whose module fixture takes
# the grader's modules and folder off sys.modules and sys.path again afterwards).
GRADED_ELSEWHERE = {
    "mifeval_fr": "tests/test_mifeval_fast.py::test_a_handful_of_responses_get_upstreams_committed_verdicts[fr]",
    "mifeval_ja": "tests/test_mifeval_fast.py::test_a_handful_of_responses_get_upstreams_committed_verdicts[ja]",
    "mifeval_es": "tests/test_mifeval_grader.py::test_spanish_is_refused_naming_both_spacy_models",
}


@pytest.fixture(scope="module")
def warmed(upstream, ifbench_graders: IfbenchGraders) -> None:
    """What the graders load on their first use (langdetect's profiles, NLTK's punkt, stop words
    and tagger), loaded once for the module: the tests' time is their grading."""
    import langdetect
    import nltk
    from nltk.corpus import stopwords

    langdetect.detect("warming up the language profiles")
    nltk.pos_tag(nltk.word_tokenize(nltk.sent_tokenize("Run the tagger. Then split it.")[0]))
    stopwords.words("english")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_task_grades_real_prompts_in_process_as_an_independent_source_does(
    request: pytest.FixtureRequest, warmed: None, name: str
) -> None:
    FAMILIES[name](request, name)


def test_families_name_every_task_of_the_registry() -> None:
    assert sorted([*FAMILIES, *GRADED_ELSEWHERE]) == sorted(TASKS)
