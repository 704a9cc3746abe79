"""A tamper message names where two versions of a file first differ (ifaudit.core.difference)."""

from __future__ import annotations

import json

from ifaudit.core.difference import first_difference


def test_json_names_the_first_field_by_path() -> None:
    a = json.dumps({"run": "x", "metrics": {"acc": {"correct": 417, "total": 541}}, "z": [1, 2]}).encode()
    b = json.dumps({"metrics": {"acc": {"total": 541, "correct": 418}}, "run": "x", "z": [1, 2]}).encode()
    assert first_difference(a, b, "summary.json") == "field metrics.acc.correct: recomputed 417, bundled 418"


def test_json_lists_keys_and_types() -> None:
    assert first_difference(b'{"a": [1, 2]}', b'{"a": [1, 3]}', "x.json") == "field a[1]: recomputed 2, bundled 3"
    assert first_difference(b'{"a": [1]}', b'{"a": [1, 2]}', "x.json") == "field a: 1 items recomputed, 2 bundled"
    assert first_difference(b'{"a": 1}', b'{"a": 1, "b": 2}', "x.json") == "field b: only in the bundled file"
    assert first_difference(b'{"a": 1}', b'{"a": 1.0}', "x.json") == "field a: recomputed 1, bundled 1.0"
    # the same document in other bytes: the first differing line
    assert first_difference(b'{"a": 1}', b'{"a":1}', "x.json") == """line 1: recomputed '{"a": 1}', bundled '{"a":1}'"""
    same_lines = "the same lines, other bytes (line endings or a binary file)"
    assert first_difference(b"a\nb\n", b"a\r\nb\r\n", "x.md") == same_lines


def test_other_files_name_the_first_line() -> None:
    a = b"run,acc\nx,0.77\ny,0.5\n"
    b = b"run,acc\nx,0.97\ny,0.5\n"
    assert first_difference(a, b, "metrics.csv") == "line 2: recomputed 'x,0.77', bundled 'x,0.97'"
    assert first_difference(a, a + b"z,1\n", "metrics.csv") == "line 4: 3 lines recomputed, 4 bundled"
    long = b"x" * 200
    assert first_difference(long, long + b"y", "r.md") == f"line 1: recomputed '{'x' * 59}…', bundled '{'x' * 59}…'"
    assert (
        first_difference(b"{not json", b"{not jsoN", "t.json") == "line 1: recomputed '{not json', bundled '{not jsoN'"
    )
