"""Content, not clocks, in process: what a DAG's start removes because bytes it came from changed,
what a DAG's end records, and the folder's content lock (steps/planning/content.py), each promise
of the module's docstring held by a fast test on a project laid out as the workflow lays it out.

These were reached before only through DAG runs (test_content_not_clocks.py, marked e2e), so
mutmut counted content.py's mutants of them as "no tests" (419 of 499, 2026-12-07). Each test was
seen failing on the mutations its docstring names (applied by hand, then reverted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ifaudit.io import ledger
from ifaudit.steps.planning import content, plan
from ifaudit.steps.planning.jobs import RunPlan

TASK = "ifeval_arabic_inception"  # a task whose canary reads no dataset: the runs read only theirs
STAGED = Path(plan.STAGED)
REPORT, REPORT_HTML = plan.report_file("report.md"), plan.report_file("report.html")

# Every file of the project: the user's own datasets (mine/), their copies and a fetched dataset
# (resources/data), the task's environment record, an NLTK resource materialized whole, three runs'
# results (alpha grades the user's own responses, beta a model's, gamma a judge's), the stores'
# entries, a layout folder (canary), a run of an earlier config (old), a writer's temporary, the
# report and its HTML rendering.
FILES = [
    "mine/prompts.jsonl",
    "mine/responses.jsonl",
    "resources/data/own_prompts.jsonl",
    "resources/data/own_prompts.json",
    "resources/data/own_responses.jsonl",
    "resources/data/own_responses.json",
    "resources/data/fetched.jsonl",
    "resources/data/fetched.json",
    f"resources/environment/{TASK}.json",
    "resources/nltk_data/tokenizers/punkt_tab/english/collocations.tab",
    "resources/nltk_data/tokenizers/punkt_tab/README",
    "resources/google_ifeval/instructions.py",
    "resources/upstream/ifbench/c6767a1/instructions.py",
    "resources/upstream/ifbench/c6767a1/instructions_util.py",
    "results/alpha/grades.jsonl",
    "results/alpha/summary.json",
    "results/beta/responses.jsonl",
    "results/beta/grades.jsonl",
    "results/gamma/verdicts.jsonl",
    "results/generations/abc.json",
    "results/judgements/def.json",
    "results/canary/ifeval.json",
    "results/old/grades.jsonl",
    "results/.tmp-writer",
    REPORT,
    REPORT_HTML,
]
OWN = {"mine/prompts.jsonl", "mine/responses.jsonl"}
STORES = {"results/generations/abc.json", "results/judgements/def.json"}
NOT_TRACKED = {"results/old/grades.jsonl", REPORT_HTML}
KEPT = sorted(
    name for name in FILES if name.startswith("results/") and name not in STORES | NOT_TRACKED | {"results/.tmp-writer"}
)


def _config() -> dict:
    run = {"task": TASK, "prompts": "own_prompts"}
    return {
        "runs": {
            "alpha": {**run, "responses": "own_responses"},
            "beta": {**run, "prompts": "fetched", "model": {"name": "m"}},
            "gamma": {**run, "responses": "own_responses", "judge": {"name": "j"}},
        },
        "datasets": {
            "own_prompts": {"path": "mine/prompts.jsonl"},
            "own_responses": {"path": "./mine//responses.jsonl"},  # as the user wrote it: normalized
            "fetched": {"mirror": "x/fetched.jsonl", "sha256": "0" * 64},
        },
        # Spelled as a user may (normalized); the default generation store.
        "judgement_store": "./results/judgements/",
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunPlan:
    """The project above, recorded as a DAG's end records it; the working folder is the project."""
    monkeypatch.chdir(tmp_path)
    for name in FILES:
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(f"{name}\n")
    jobs = RunPlan(_config(), tmp_path / "pin.toml", tmp_path / "infobench.toml")
    content.record(jobs, STAGED)
    return jobs


def _files() -> set[str]:
    return {str(path) for path in Path().rglob("*") if path.is_file() and not str(path).startswith(".snakemake")}


def _edit(name: str) -> str:
    """Change a file's bytes, its modification time kept; its sha256 now."""
    before = os.stat(name)
    Path(name).write_text(f"{name} edited\n")
    os.utime(name, ns=(before.st_atime_ns, before.st_mtime_ns))
    return ledger.sha256_file(name)


def _changed(name: str, now: str, consequence: str) -> str:
    was = ledger.sha256_bytes(f"{name}\n".encode())
    return f"{name}: its bytes changed since the DAG last recorded them (sha256 {now}, recorded {was}){consequence}"


def test_a_dags_end_records_every_tracked_file_and_keeps_the_results_it_made(project: RunPlan) -> None:
    """The ledger holds the results/ and resources/ files but the HTML rendering and an earlier
    config's run, the user's own files and the stores' entries; of them only the results the DAG
    made are kept (mutations: a store's entry or a temporary recorded as kept, a fetched copy kept,
    the other runs' folders recorded, the sources or stores left out, the normalization dropped)."""
    recorded = ledger.read(STAGED)
    assert recorded is not None
    assert sorted(recorded) == sorted(set(FILES) - NOT_TRACKED)
    assert sorted(name for name, entry in recorded.items() if entry.kept) == KEPT
    assert content.tracked_files(project) == sorted(set(FILES) - NOT_TRACKED)


def test_a_start_with_nothing_changed_removes_nothing_says_nothing_and_writes_nothing(
    project: RunPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(mutations: the ledger written again at every start, its stat keys compared with `==`)"""
    before = ledger.read(STAGED)
    hashed = _hashing_counted(monkeypatch)
    monkeypatch.setattr(ledger, "write", lambda *args, **kwargs: pytest.fail("the ledger was written again"))
    assert content.redo_changed(project, STAGED) == []
    assert _files() == set(FILES) and ledger.read(STAGED) == before and hashed == []


def test_a_dags_end_records_the_bytes_its_jobs_read_and_hashes_no_unchanged_file(
    project: RunPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The jobs' records of what they read are taken (and removed); a file read with other bytes
    than it holds now is recorded with those; nothing unchanged is hashed again, even after an
    untrusted ledger (mutations: the reads not passed, the known entries dropped, `and` for `or`)."""
    read = ledger.sha256_bytes(b"what the job read\n")
    record = STAGED / f"{ledger.READS_STEM}1-00.json"
    record.write_text(json.dumps({"read": {os.path.abspath("mine/responses.jsonl"): [read]}}))
    hashed = _hashing_counted(monkeypatch)
    content.record(project, STAGED)
    recorded = ledger.read(STAGED)
    assert recorded is not None and not record.exists() and hashed == []
    assert recorded["mine/responses.jsonl"] == ledger.Entry(read, ledger.UNSEEN)
    (second,) = STAGED.glob(f"{ledger.LEDGER_STEM}-*.json")
    (STAGED / f"{ledger.LEDGER_STEM}-0.json").write_text("{}")  # two ledgers: not trusted
    content.record(project, STAGED)
    assert len(hashed) == len(recorded) and ledger.read(STAGED) == {
        **recorded,
        "mine/responses.jsonl": ledger.entry("mine/responses.jsonl"),
    }


@pytest.mark.parametrize(
    ("name", "removed", "consequence"),
    [
        # A user's own file: its copies and every run that reads it (alpha and gamma read the
        # responses), never the file itself.
        (
            "mine/responses.jsonl",
            {
                "resources/data/own_responses.jsonl",
                "resources/data/own_responses.json",
                "results/alpha",
                "results/gamma",
            },
            ": what was made from it is made again",
        ),
        (
            "mine/prompts.jsonl",
            {"resources/data/own_prompts.jsonl", "resources/data/own_prompts.json", "results/alpha", "results/gamma"},
            ": what was made from it is made again",
        ),
        # A result: itself and its run's folder.
        ("results/beta/grades.jsonl", {"results/beta"}, ": made again"),
        # A fetched dataset: itself (fetched again) and the runs reading it.
        ("resources/data/fetched.jsonl", {"resources/data/fetched.jsonl", "results/beta"}, ": made again"),
        ("resources/data/fetched.json", {"resources/data/fetched.json", "results/beta"}, ": made again"),
        # A copy of a user's own dataset made by the DAG: itself and the runs reading it.
        (
            "resources/data/own_prompts.jsonl",
            {"resources/data/own_prompts.jsonl", "results/alpha", "results/gamma"},
            ": made again",
        ),
        # The task's environment record: every run of the task.
        (
            f"resources/environment/{TASK}.json",
            {f"resources/environment/{TASK}.json", "results/alpha", "results/beta", "results/gamma"},
            ": made again",
        ),
        # A store's entry: the runs replayed from that store, never the entry.
        ("results/generations/abc.json", {"results/beta"}, ": what was made from it is made again"),
        ("results/judgements/def.json", {"results/gamma"}, ": what was made from it is made again"),
        # An NLTK resource is materialized whole: its folder goes; no job makes it.
        (
            "resources/nltk_data/tokenizers/punkt_tab/english/collocations.tab",
            {"resources/nltk_data/tokenizers/punkt_tab"},
            ": removed; copied again when a job needs it",
        ),
        (
            "resources/google_ifeval/instructions.py",
            {"resources/google_ifeval/instructions.py"},
            ": removed; copied again when a job needs it",
        ),
        # Only NLTK's resources are taken a folder at a time: a deeper file elsewhere goes alone.
        (
            "resources/upstream/ifbench/c6767a1/instructions.py",
            {"resources/upstream/ifbench/c6767a1/instructions.py"},
            ": removed; copied again when a job needs it",
        ),
        # A layout file: itself; no run.
        ("results/canary/ifeval.json", {"results/canary"}, ": made again"),
    ],
)
def test_a_changed_file_removes_itself_if_made_every_run_made_from_it_and_the_report(
    project: RunPlan, name: str, removed: set[str], consequence: str
) -> None:
    """One line per changed file saying what is made again, and exactly that removed, with the
    report; the user's own files and the stores' entries never (mutations: the runs a source, a
    store, a dataset's copy or the environment record fed mistaken or dropped, the NLTK folder
    cut at another depth, a store's entry removed, the consequence's words swapped)."""
    now = _edit(name)
    assert content.redo_changed(project, STAGED) == [_changed(name, now, consequence)]
    gone = {kept for kept in FILES if any(kept == path or kept.startswith(path + "/") for path in removed | {REPORT})}
    assert _files() == set(FILES) - gone
    assert all(os.path.isdir(folder) for folder in ("results", "resources", "mine"))


def test_the_files_gone_are_one_line_and_their_runs_made_again(project: RunPlan) -> None:
    """Kept results removed by hand are a change (the first named, how many more); the folders of
    their runs go, with the report; a store's entry or a user's file gone is no change (mutations:
    `gone` taken for a change of bytes, the consequence of the first gone dropped or of none)."""
    for name in ("results/beta/grades.jsonl", "results/alpha/summary.json", "results/generations/abc.json"):
        os.unlink(name)
    os.unlink("mine/prompts.jsonl")
    assert content.redo_changed(project, STAGED) == [
        "results/alpha/summary.json and 1 more files the DAG made: gone since the DAG last recorded them: made again"
    ]
    assert _files() == set(FILES) - {
        "results/beta/grades.jsonl",
        "results/beta/responses.jsonl",
        "results/alpha/summary.json",
        "results/alpha/grades.jsonl",
        "results/generations/abc.json",
        "mine/prompts.jsonl",
        REPORT,
    }
    assert not os.path.exists("results/alpha") and not os.path.exists("results/beta")


def test_a_file_read_differently_by_two_jobs_is_named_as_such_and_changed_and_gone_in_order(project: RunPlan) -> None:
    """A file the DAG's jobs read with different bytes is a change whatever it holds, said in its
    own words; a changed file's line comes before the line of the gone ones (mutations: the path
    dropped from the line, the two kinds of line merged or reordered)."""
    recorded = ledger.read(STAGED)
    assert recorded is not None
    read = {os.path.abspath("results/alpha/grades.jsonl"): {"a" * 64, "b" * 64}}
    ledger.write(STAGED, list(recorded), recorded, [name for name, entry in recorded.items() if entry.kept], read)
    os.unlink("results/beta/grades.jsonl")
    now = ledger.sha256_file("results/alpha/grades.jsonl")
    assert content.redo_changed(project, STAGED) == [
        "results/alpha/grades.jsonl: it changed while the DAG's jobs read it (they read different bytes;"
        f" sha256 {now} now): made again",
        "results/beta/grades.jsonl: gone since the DAG last recorded it: made again",
    ]
    assert not os.path.exists("results/alpha") and not os.path.exists("results/beta")


def test_a_change_in_a_run_of_an_earlier_config_or_outside_the_plan_redoes_nothing(project: RunPlan) -> None:
    """A ledger entry of a run this plan does not have, or of a file outside results/, resources/,
    the stores and the user's own files, is not compared (mutations: `_of_another_run`'s tests
    inverted or its depth moved, `_concerned`'s folders dropped)."""
    recorded = ledger.read(STAGED)
    assert recorded is not None
    Path("elsewhere.txt").write_text("x")
    Path("results/zeta").mkdir()
    Path("results/zeta/grades.jsonl").write_text("z")
    extra = [*recorded, "elsewhere.txt", "results/zeta/grades.jsonl"]
    ledger.write(STAGED, extra, recorded, [*KEPT, "results/zeta/grades.jsonl"])
    for name in ("elsewhere.txt", "results/zeta/grades.jsonl"):
        _edit(name)
    os.unlink("results/zeta/grades.jsonl")
    assert content.redo_changed(project, STAGED) == []
    assert _files() == {*FILES, "elsewhere.txt"}


def test_a_ledger_edited_by_hand_removes_every_file_the_dag_made_and_the_empty_folders(project: RunPlan) -> None:
    """Every file under results/ and resources/ goes but the stores' entries, the HTML rendering
    and an earlier config's runs; folders left empty go, the products' own folders and hidden ones
    stay (mutations: the stores or untracked files removed, the message dropped, no pruning)."""
    (written,) = STAGED.glob(f"{ledger.LEDGER_STEM}-*.json")
    written.write_text(written.read_text().replace('"kept"', '"kept" '))
    Path("results/.staging").mkdir()
    assert content.redo_changed(project, STAGED) == [
        f"{STAGED}: the content ledger was changed by hand: every result is made again"
    ]
    assert _files() == OWN | STORES | NOT_TRACKED
    folders = {str(path) for path in Path().rglob("*") if path.is_dir() and not str(path).startswith(".snakemake")}
    assert folders == {
        "mine",
        "results",
        "resources",
        "results/generations",
        "results/judgements",
        "results/old",
        "results/.staging",
    }


def test_a_ledger_edited_by_hand_with_nothing_made_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    jobs = RunPlan(_config(), tmp_path / "pin.toml", tmp_path / "infobench.toml")
    for index in range(2):  # two ledgers: not trusted
        STAGED.mkdir(parents=True, exist_ok=True)
        (STAGED / f"{ledger.LEDGER_STEM}-{index}.json").write_text("{}")
    assert content.redo_changed(jobs, STAGED) == []


def test_a_start_without_a_ledger_records_the_files_as_they_are(project: RunPlan) -> None:
    """Results from before the ledger: recorded, nothing removed (mutations: nothing recorded, the
    made files removed as if the ledger were untrusted)."""
    for old in STAGED.glob(f"{ledger.LEDGER_STEM}-*.json"):
        old.unlink()
    assert content.redo_changed(project, STAGED) == []
    recorded = ledger.read(STAGED)
    assert recorded is not None and sorted(recorded) == sorted(set(FILES) - NOT_TRACKED)
    assert _files() == set(FILES)


def test_a_touched_file_gets_its_time_back_and_is_recorded_under_its_new_stat_key(
    project: RunPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `touch` of a result: nothing removed, its recorded time back, and the ledger written again
    with the stat key it has now, so the next start does not hash it again; a file copied back with
    its time (`cp -p`: a new change time) is recorded under its new key too (mutations: the ledger
    not written again, written with the old keys, the restored files left out of it, the files
    compared hashed again as they are recorded)."""
    name, copied = "results/alpha/summary.json", "results/beta/grades.jsonl"
    then = os.stat(name).st_mtime_ns
    os.utime(name, ns=(then, then + 10**9))
    data, times = Path(copied).read_bytes(), os.stat(copied)
    os.unlink(copied)
    Path(copied).write_bytes(data)
    os.utime(copied, ns=(times.st_atime_ns, times.st_mtime_ns))
    hashed = _hashing_counted(monkeypatch)
    assert content.redo_changed(project, STAGED) == []
    # Each hashed once to be compared; the restored one once more as it is recorded again.
    assert sorted(hashed) == sorted([copied, name, name])
    assert os.stat(name).st_mtime_ns == then and _files() == set(FILES)
    recorded = ledger.read(STAGED)
    assert recorded is not None and sorted(recorded) == sorted(set(FILES) - NOT_TRACKED)
    assert sorted(name for name, entry in recorded.items() if entry.kept) == KEPT
    for path in (name, copied, "mine/prompts.jsonl"):
        assert recorded[path].stat_key == ledger.stat_key(os.lstat(path))


def test_a_file_whose_change_time_alone_changed_is_recorded_under_its_new_stat_key(project: RunPlan) -> None:
    """No time given back (a chmod): the ledger is still written again, so that the file is not
    hashed at every start (mutation: the rewrite asked only when a time was given back)."""
    os.chmod("results/alpha/summary.json", 0o600)
    assert content.redo_changed(project, STAGED) == []
    recorded = ledger.read(STAGED)
    assert recorded is not None
    assert recorded["results/alpha/summary.json"].stat_key == ledger.stat_key(os.lstat("results/alpha/summary.json"))


def test_a_ledger_from_before_kept_was_recorded_counts_the_results_gone(project: RunPlan) -> None:
    """A ledger written before `kept` was: the results under results/ are taken as kept by their
    paths, so one removed by hand is a change (mutations: the kept flag not set from the path, or
    only where both say so)."""
    recorded = ledger.read(STAGED)
    assert recorded is not None
    ledger.write(STAGED, list(recorded), recorded)  # nothing recorded as kept
    os.unlink("results/beta/grades.jsonl")
    assert content.redo_changed(project, STAGED) == [
        "results/beta/grades.jsonl: gone since the DAG last recorded it: made again"
    ]


def test_a_store_given_as_an_absolute_folder_is_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store anywhere (an absolute folder, its name ending as any name may): its entries are
    recorded, never removed, and feed the runs replayed from it (mutations: the store's folder
    stripped of its leading `/` or of trailing letters before the comparison)."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "shared/judgeX"
    store.mkdir(parents=True)
    (store / "e.json").write_text(f"{store / 'e.json'}\n")
    for name in ("results/gamma/verdicts.jsonl", "results/alpha/grades.jsonl"):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(name)
    jobs = RunPlan({**_config(), "judgement_store": str(store)}, tmp_path / "pin.toml", tmp_path / "infobench.toml")
    content.record(jobs, STAGED)
    recorded = ledger.read(STAGED)
    assert recorded is not None and not recorded[str(store / "e.json")].kept
    now = _edit(str(store / "e.json"))
    assert content.redo_changed(jobs, STAGED) == [
        _changed(str(store / "e.json"), now, ": what was made from it is made again")
    ]
    assert _files() == {"results/alpha/grades.jsonl", "shared/judgeX/e.json"}  # gamma's folder went


def test_a_file_changed_as_its_time_is_given_back_is_a_change_at_the_next_start(
    project: RunPlan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose time was given back is hashed once more when the ledger is written again, and
    recorded with the bytes that were compared, so a write in between is found at the next start
    (mutation: the restored files' expected digests not passed to the ledger)."""
    name = "results/alpha/summary.json"
    os.utime(name, ns=(0, os.stat(name).st_mtime_ns + 10**9))
    restore = ledger.restore_times

    def restore_then_written(recorded: dict, same: dict) -> list[str]:
        restored = restore(recorded, same)
        Path(name).write_text("written meanwhile\n")
        return restored

    monkeypatch.setattr(ledger, "restore_times", restore_then_written)
    assert content.redo_changed(project, STAGED) == []
    monkeypatch.setattr(ledger, "restore_times", restore)
    (line,) = content.redo_changed(project, STAGED)
    assert line.startswith(f"{name}: its bytes changed") and not os.path.exists("results/alpha")


def test_what_a_stopped_dag_left_unfinished_is_removed_at_the_next_start_in_one_line(project: RunPlan) -> None:
    """Onerror notes the outputs under results/ and resources/ the DAG planned to make again and
    did not; the next start removes them (a folder whole), says so in one line, and forgets the
    note (mutations: the note not written, paths outside the products noted or removed, the count
    off by one, the note kept)."""
    content.left_unfinished(STAGED, ["results/gamma", "results/alpha/grades.jsonl", "mine/prompts.jsonl", "gone.txt"])
    assert json.loads((STAGED / content.UNFINISHED).read_text()) == ["results/alpha/grades.jsonl", "results/gamma"]
    assert content.changed_since_recorded(Path()) == [
        f"{STAGED / content.UNFINISHED}: the last DAG stopped before making some results again; run the DAG again"
    ]
    assert content.redo_changed(project, STAGED) == [
        "results/alpha/grades.jsonl and 1 more: the last DAG stopped before making them again from changed inputs:"
        " made again"
    ]
    assert _files() == set(FILES) - {"results/alpha/grades.jsonl", "results/gamma/verdicts.jsonl"}
    # The note is forgotten; until the DAG makes them again, the removed results are gone.
    assert not (STAGED / content.UNFINISHED).exists()
    assert content.changed_since_recorded(Path()) == [
        "results/alpha/grades.jsonl and 1 more files the DAG made: gone since the DAG last recorded them"
    ]


def test_one_unfinished_output_is_named_alone_and_none_noted_writes_no_note(project: RunPlan) -> None:
    content.left_unfinished(STAGED, ["mine/prompts.jsonl"])
    assert not (STAGED / content.UNFINISHED).exists()
    content.left_unfinished(STAGED, [REPORT])
    (STAGED / content.UNFINISHED).write_text(json.dumps([REPORT, "results/none.json", 3]))
    assert content.redo_changed(project, STAGED) == [
        f"{REPORT}: the last DAG stopped before making them again from changed inputs: made again"
    ]
    Path(REPORT).write_text(f"{REPORT}\n")  # made again, as it was
    # A file alone in its folder: the folder left empty goes too (a resource is renamed into place).
    content.left_unfinished(STAGED, [f"resources/environment/{TASK}.json"])
    assert content.redo_changed(project, STAGED) == [
        f"resources/environment/{TASK}.json: the last DAG stopped before making them again from changed inputs: made again"
    ]
    assert not os.path.exists("resources/environment")
    Path("resources/environment").mkdir()
    Path(f"resources/environment/{TASK}.json").write_text(f"resources/environment/{TASK}.json\n")
    (STAGED / content.UNFINISHED).write_text("not json")
    assert content.redo_changed(project, STAGED) == []


def test_empty_folders_are_pruned_deepest_first_the_roots_and_hidden_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(mutations: pruned top-down, which leaves a folder its children emptied; hidden staging
    folders removed)"""
    monkeypatch.chdir(tmp_path)
    for folder in ("results/a/b/c", "results/.stage/x", "results/d", "resources/nltk_data/tokenizers"):
        Path(folder).mkdir(parents=True)
    Path("results/d/keep.txt").write_text("k")
    content._prune_empty(("results",))
    assert sorted(str(path) for path in Path("results").rglob("*")) == [
        "results/.stage",
        "results/.stage/x",
        "results/d",
        "results/d/keep.txt",
    ]
    content._prune_empty(("resources/nltk_data", "missing"))
    assert sorted(str(path) for path in Path("resources").rglob("*")) == ["resources/nltk_data"]


def test_remove_takes_a_folder_whole_a_link_not_its_target_and_ignores_what_is_not_there(tmp_path: Path) -> None:
    target = tmp_path / "target"
    (target / "deep").mkdir(parents=True)
    (target / "deep/file").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target)
    content._remove(str(link))
    assert not os.path.lexists(link) and (target / "deep/file").exists()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    content._remove(str(dangling))
    content._remove(str(tmp_path / "nowhere"))
    content._remove(str(target))
    assert not os.path.lexists(dangling) and not target.exists()


def test_the_content_lock_is_held_once_and_names_its_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second start in the same folder is refused while the first holds the lock, and told who
    holds it, in one printable line even of bytes that are not UTF-8 (mutations: the lock shared,
    not kept, the holder not written, cut, or the earlier holder's bytes left; the decoding strict
    or an unknown error handler; the file's mode)."""
    monkeypatch.setattr(content, "_HELD", [])
    staged = tmp_path / "deep/staged"
    assert content.holding_the_lock(staged) == "another DAG"
    assert content.hold_start_lock(staged, "snakemake (pid 12)\x1b[2J")
    assert content._HELD and (staged / content.LOCK).read_text() == "snakemake (pid 12)\x1b[2J"
    assert content.holding_the_lock(staged) == "snakemake (pid 12)\\x1b[2J"
    # Another open file description of the same file: a second DAG's start.
    assert not content.hold_start_lock(staged, "second")
    assert content.holding_the_lock(staged) == "snakemake (pid 12)\\x1b[2J"
    (staged / content.LOCK).write_text("  " + "h" * 600 + "\n")
    assert content.holding_the_lock(staged) == "h" * 500
    (staged / content.LOCK).write_bytes(b"dag \xff\xfe")
    assert content.holding_the_lock(staged) == "dag \ufffd\ufffd"
    for fd in content._HELD:
        os.close(fd)
    content._HELD.clear()
    # Released: taken again with no holder named, what the last holder wrote is gone.
    assert content.hold_start_lock(staged)
    assert (staged / content.LOCK).read_bytes() == b"" and content.holding_the_lock(staged) == "another DAG"
    umask = os.umask(0o022)
    os.umask(umask)
    assert (staged / content.LOCK).stat().st_mode & 0o777 == 0o666 & ~umask
    for fd in content._HELD:
        os.close(fd)


# --- the ledger (io/ledger.py): what mutmut's run left ----------------------------------------------


def _hashing_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files hashed from now on (ledger.sha256_file's calls)."""
    hashed: list[str] = []
    real = ledger.sha256_file

    def counted(path: str) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(ledger, "sha256_file", counted)
    return hashed


def test_a_file_whose_stat_key_is_unchanged_is_not_hashed_again_to_be_compared_or_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module's promise: a start costs no time linear in the bytes of unchanged results. An
    unchanged file's entry now is the recorded one (digest, stat key; not kept unless asked), and
    writing it again keeps it without reading it, kept as asked (mutations: the known entry not
    passed to `entry` by `compare` or `write`, its stat key, kept flag or default dropped)."""
    names = [str(tmp_path / name) for name in ("a.json", "b.json")]
    for name in names:
        Path(name).write_text(name)
    recorded = ledger.write(tmp_path / "staged", names, {})
    hashed = _hashing_counted(monkeypatch)
    changes, same = ledger.compare(recorded)
    assert changes == [] and same == recorded and hashed == []
    assert ledger.write(tmp_path / "staged", names, recorded, kept=names[:1]) == {
        names[0]: ledger.Entry(recorded[names[0]].sha256, recorded[names[0]].stat_key, True),
        names[1]: recorded[names[1]],
    }
    assert hashed == []
    assert ledger.entry(names[0]) == recorded[names[0]] and hashed == names[:1]


def test_a_kept_file_gone_is_a_change_naming_the_digest_recorded(tmp_path: Path) -> None:
    """(mutation: the recorded digest of a file gone dropped)"""
    name = tmp_path / "grades.jsonl"
    name.write_text("{}\n")
    recorded = ledger.write(tmp_path / "staged", [str(name)], {}, kept=[str(name)])
    name.unlink()
    assert ledger.changes(recorded) == [ledger.Change(str(name), recorded[str(name)].sha256, None, gone=True)]


def test_restore_times_gives_back_only_a_newer_modification_time_and_goes_on_past_a_file_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a file whose modification time is newer than recorded gets the recorded one back: not
    one as recorded (its change time changed by chmod), one older (copied back with `cp -p`), one
    whose digest is of bytes read rather than on disk (UNSEEN); a file whose time cannot be set is
    passed over and the next still restored (mutations: the conditions joined by `and`, the change
    time read for the modification time on either side, `<` for `<=`, `break` for `continue`)."""
    names = {
        key: str(tmp_path / f"{key}.json")
        for key in ("as_is", "chmod", "older", "unseen", "stuck", "touched", "between")
    }
    for name in names.values():
        Path(name).write_text(name)
    os.utime(names["between"], ns=(0, 10**18))  # recorded mtime far older than its change time
    recorded = ledger.write(tmp_path / "staged", list(names.values()), {})
    recorded[names["unseen"]] = ledger.Entry(recorded[names["unseen"]].sha256, ledger.UNSEEN)
    then = {key: recorded[name].stat_key[2] for key, name in names.items()}
    os.chmod(names["chmod"], 0o600)
    os.utime(names["older"], ns=(0, then["older"] - 10**9))
    for key in ("unseen", "stuck", "touched"):
        os.utime(names[key], ns=(0, then[key] + 10**9))
    os.utime(names["between"], ns=(0, 10**18 + 10**9))  # newer than recorded, older than its ctime then
    real_utime = os.utime

    def utime(path: str, *args: object, **kwargs: object) -> None:
        if path == names["stuck"]:
            raise PermissionError(path)
        real_utime(path, *args, **kwargs)

    monkeypatch.setattr(os, "utime", utime)
    changes, same = ledger.compare(recorded)
    assert changes == [] and list(same) == sorted(names.values())
    assert ledger.restore_times(recorded, same) == [names["between"], names["touched"]]  # in path order
    assert os.stat(names["touched"]).st_mtime_ns == then["touched"]
    assert os.stat(names["between"]).st_mtime_ns == 10**18
    assert os.stat(names["older"]).st_mtime_ns == then["older"] - 10**9
    assert os.stat(names["unseen"]).st_mtime_ns == then["unseen"] + 10**9
    assert os.stat(names["stuck"]).st_mtime_ns == then["stuck"] + 10**9


def test_an_entry_as_read_keeps_its_stat_key_when_the_bytes_read_are_there_and_its_kept_flag_always(
    tmp_path: Path,
) -> None:
    """(mutations: `<` for `<=`, which records a file read as it is under no stat key and hashes it
    at every start; the kept flag of a file read otherwise dropped, which lets it go unnoticed)"""
    name = tmp_path / "grades.jsonl"
    name.write_text("{}\n")
    now = ledger.entry(str(name), kept=True)
    assert now is not None
    assert ledger.as_read(now, {now.sha256}) is now and ledger.as_read(now, set()) is now
    assert ledger.as_read(now, {"a" * 64}) == ledger.Entry("a" * 64, ledger.UNSEEN, True)
    assert ledger.as_read(now, {"a" * 64, now.sha256}) == ledger.Entry(ledger.READ_DIFFERENTLY, ledger.UNSEEN, True)
    recorded = ledger.write(tmp_path / "staged", [str(name)], {}, [str(name)], {str(name): {now.sha256}})
    assert recorded == {str(name): now}


def test_a_jobs_reader_hashes_the_whole_file_in_order_and_tells_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in pieces of several sizes, the digest noted is the file's, and `tell` is where the
    reading is (mutations: the hashed or the read position set to the last read's count)."""
    from ifaudit.io.paths import open_input

    monkeypatch.setenv("IFAUDIT_READS", str(tmp_path))
    monkeypatch.setattr(ledger, "_read", {})
    monkeypatch.setattr(ledger.atexit, "register", lambda function: None)
    data = bytes(range(256)) * 400
    (tmp_path / "data.bin").write_bytes(data)
    with open_input(tmp_path / "data.bin") as handle:
        first = handle.read(10000) + handle.read(10000)
        assert handle.tell() == 20000
        assert first + handle.read(30000) + handle.read() == data
    assert ledger._read == {str(tmp_path / "data.bin"): {ledger.sha256_bytes(data)}}


def test_a_job_registers_its_record_at_its_first_read_and_leaves_one_only_with_reads_and_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The record is written at the job's exit (registered with the first read noted, once); with
    nothing read, or no folder named, none is written; one that cannot be written is said in one
    line, no traceback at exit (found so: `suppress(OSError)` never caught atomic_write_bytes's
    IfauditError; mutations: registered only from the second read on, `and` for `or`)."""
    registered: list[object] = []
    monkeypatch.setattr(ledger.atexit, "register", registered.append)
    monkeypatch.setattr(ledger, "_read", {})
    monkeypatch.setenv("IFAUDIT_READS", str(tmp_path / "reads"))
    (tmp_path / "reads").mkdir()
    ledger._leave_reads()
    assert list((tmp_path / "reads").iterdir()) == []
    ledger._note("a.json", "1" * 64)
    assert registered == [ledger._leave_reads]
    ledger._note("b.json", "2" * 64)
    assert registered == [ledger._leave_reads]
    monkeypatch.delenv("IFAUDIT_READS")
    ledger._leave_reads()
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("IFAUDIT_READS", str(tmp_path / "file/reads"))  # cannot be made: OSError
    ledger._leave_reads()
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith(f"{tmp_path}/file/reads/read-") and said.endswith(
        ": cannot write: Not a directory (what this job read is not recorded)"
    )
    monkeypatch.setenv("IFAUDIT_READS", str(tmp_path / "reads"))
    ledger._leave_reads()
    assert ledger.taken_reads(tmp_path / "reads") == {
        os.path.abspath("a.json"): {"1" * 64},
        os.path.abspath("b.json"): {"2" * 64},
    }
    assert list((tmp_path / "reads").iterdir()) == []
