"""Shards of grading passes and their verification; the metrics of a summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ifaudit.core.errors import InputError, VerificationError
from ifaudit.core.metrics import accuracies, ifeval_metrics, score_tables
from ifaudit.steps.grading.passes import PassOutputs, parse_shard, shard_slice, verify_passes
from ifaudit.core.records import Prompt


@pytest.mark.parametrize("total, count", [(0, 3), (5, 1), (541, 7), (10, 16)])
def test_shards_cover_every_item_once_in_order(total: int, count: int) -> None:
    items = list(range(total))
    assert [x for i in range(count) for x in shard_slice(items, i, count)] == items


@pytest.mark.parametrize("spec", ["3/3", "-1/2", "a/b", "1"])
def test_bad_shard_specs(spec: str) -> None:
    with pytest.raises(InputError):
        parse_shard(spec)


def test_verify_merges_each_pass_and_keeps_the_grades_only_if_they_agree(tmp_path: Path) -> None:
    texts = [b'{"a":1}\n', b'{"a":2}\n{"a":3}\n']
    first, second = [], []
    for pass_, shards in (("a", first), ("b", second)):
        for i, text in enumerate(texts):
            shards.append(tmp_path / f"{pass_}{i}")
            shards[-1].write_bytes(text)
    outs = PassOutputs(tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "g.jsonl", tmp_path / "v.json")
    digest = verify_passes(first, second, outs)
    merged = b'{"a":1}\n{"a":2}\n{"a":3}\n'
    assert outs.first.read_bytes() == outs.second.read_bytes() == outs.grades.read_bytes() == merged
    record = json.loads(outs.record.read_text())
    assert record == {
        "identical": True,
        "passes": {"a.jsonl": digest, "b.jsonl": digest},
        "records": 3,
        "sha256": digest,
    }

    second[1].write_bytes(b'{"a":2}\n{"a":4}\n')
    fresh = PassOutputs(*(tmp_path / f"new-{name}" for name in ("a.jsonl", "b.jsonl", "g.jsonl", "v.json")))
    with pytest.raises(VerificationError, match=r"b0 and 1 more shards .* first differ at line 3; these grades do not"):
        verify_passes(first, second, fresh)
    assert not any(path.exists() for path in (fresh.first, fresh.second, fresh.grades, fresh.record))


def _prompt(key: int, instructions: int) -> Prompt:
    return Prompt(
        key=key,
        prompt=f"p{key}",
        instruction_id_list=("x",) * instructions,
        kwargs=({},) * instructions,
        path="p.jsonl",
        line=key,
    )


def _grade(key: int, strict: list[bool], loose: list[bool], sample: int = 0) -> dict:
    return {
        "key": key,
        "sample": sample,
        "strict": {"follow_all_instructions": all(strict), "follow_instruction_list": strict},
        "loose": {"follow_all_instructions": all(loose), "follow_instruction_list": loose},
    }


def test_metrics_average_samples_within_a_prompt_and_count_missing_prompts_as_failed() -> None:
    prompts = [_prompt(1, 2), _prompt(2, 1), _prompt(3, 3)]
    grades = [
        _grade(1, [True, True], [True, True], 0),
        _grade(1, [True, False], [True, True], 1),
        _grade(2, [False], [True]),
        # prompt 3 has no response
    ]
    metrics = accuracies(score_tables(prompts, grades, ifeval_metrics()))
    assert metrics["prompt_level_strict_acc"] == {"correct": "1/2", "total": 3, "value": 0.5 / 3}
    assert metrics["inst_level_strict_acc"] == {"correct": "3/2", "total": 6, "value": 0.25}
    assert metrics["prompt_level_loose_acc"] == {"correct": 2, "total": 3, "value": 2 / 3}
    assert metrics["inst_level_loose_acc"] == {"correct": 3, "total": 6, "value": 0.5}
