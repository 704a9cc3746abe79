"""Content, not clocks: what the audit reports is of the bytes on disk now, whatever times they
carry (a restore from backup, `cp -p`, `rsync -t` and `tar x` all set old modification times).

The classes: an edited and back-dated input is graded again, an edited and back-dated result is
made again and never counted meanwhile, a staged file edited by hand is never trusted, and the
"config passed the schema" stamp tells apart configs that differ only in their types."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import GPT4_RESPONSES, IFAUDIT, REPO, read_jsonl, write_jsonl
from ifaudit.core.errors import ConfigError
from ifaudit.io import ledger
from ifaudit.io.canonical import staged_bytes
from ifaudit.steps.planning.config_check import check_schema, config_schema
from test_workflow import snakemake, summary, write_config


def backdated_edit(path: Path, edit: Callable[[bytes], bytes]) -> None:
    """Change the file's bytes and give it back its old access and modification times."""
    before = path.stat()
    path.write_bytes(edit(path.read_bytes()))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns


def counted(workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(IFAUDIT), "counted"], cwd=workdir, capture_output=True, text=True)


# --- the ledger itself (fast) ----------------------------------------------------------------------


def test_ledger_sees_a_backdated_edit_of_the_same_size(tmp_path: Path) -> None:
    data = tmp_path / "responses.jsonl"
    data.write_text('{"key": 1, "response": "yes"}\n')
    recorded = ledger.write(tmp_path / "staged", [str(data)], {})
    assert ledger.changes(recorded) == []
    backdated_edit(data, lambda text: text.replace(b"yes", b"no!"))
    (change,) = ledger.changes(recorded)
    assert change.path == str(data) and change.recorded == recorded[str(data)].sha256
    assert change.now == hashlib.sha256(data.read_bytes()).hexdigest()


def test_ledger_names_a_kept_file_that_is_gone_and_lets_others_come_and_go(tmp_path: Path) -> None:
    made, own = tmp_path / "grades.jsonl", tmp_path / "mine.jsonl"
    made.write_text("{}\n")
    own.write_text("{}\n")
    recorded = ledger.write(tmp_path / "staged", [str(made), str(own)], {}, kept=[str(made)])
    assert ledger.read(tmp_path / "staged") == recorded
    made.unlink()
    own.unlink()
    (change,) = ledger.changes(recorded)
    assert (change.path, change.now, change.gone) == (str(made), None, True)


def test_ledger_edited_by_hand_is_not_trusted(tmp_path: Path) -> None:
    data = tmp_path / "a.txt"
    data.write_text("a")
    ledger.write(tmp_path, [str(data)], {})
    assert ledger.read(tmp_path) is not None
    (written,) = tmp_path.glob("content-ledger-*.json")
    written.write_text(written.read_text().replace(hashlib.sha256(b"a").hexdigest(), "0" * 64))
    assert ledger.read(tmp_path) is None


def test_ledger_never_opens_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert ledger.entry(str(fifo)) is None  # no open: a FIFO without a writer would hang


def test_a_jobs_reads_are_recorded_as_read_not_as_they_are_after(tmp_path: Path, monkeypatch) -> None:
    """In a DAG's job (IFAUDIT_READS set) every input opened through open_input is hashed as read,
    whole even when the reader stopped early; the ledger records those bytes, under a stat key no
    file has, so a file changed after the job read it is a change at the next start."""
    from ifaudit.io.paths import open_input

    monkeypatch.setenv("IFAUDIT_READS", str(tmp_path / "staged"))
    monkeypatch.setattr(ledger, "_read", {})
    (tmp_path / "staged").mkdir()
    data = tmp_path / "responses.jsonl"
    data.write_bytes(b'{"key": 1, "response": "yes"}\n' * 1000)
    read_then = hashlib.sha256(data.read_bytes()).hexdigest()
    with open_input(data) as handle:
        handle.readline()  # stops after one line: the rest is hashed at close
    ledger._leave_reads()
    backdated_edit(data, lambda text: text[: len(text) // 2])
    taken = ledger.taken_reads(tmp_path / "staged")
    assert taken == {str(data): {read_then}} and not list((tmp_path / "staged").glob("read-*"))
    recorded = ledger.write(tmp_path / "staged", [str(data)], {}, read=taken)
    assert recorded[str(data)].sha256 == read_then and recorded[str(data)].stat_key == ledger.UNSEEN
    (change,) = ledger.changes(ledger.read(tmp_path / "staged") or {})
    assert (change.recorded, change.now) == (read_then, hashlib.sha256(data.read_bytes()).hexdigest())
    # Two jobs that read different bytes: no digest is right, the file is a change whatever it holds.
    other = ledger.as_read(recorded[str(data)], {read_then, change.now})
    assert other.sha256 == ledger.READ_DIFFERENTLY and ledger.changes({str(data): other})


def test_a_zip_read_through_open_input_in_a_job_is_hashed_whole(tmp_path: Path, monkeypatch) -> None:
    """A reader that seeks (zipfile, as an inspect .eval log is read) still gets its bytes."""
    import zipfile

    from ifaudit.io.paths import open_input

    monkeypatch.setenv("IFAUDIT_READS", str(tmp_path))
    monkeypatch.setattr(ledger, "_read", {})
    log = tmp_path / "run.eval"
    with zipfile.ZipFile(log, "w") as archive:
        archive.writestr("header.json", "{}" * 5000)
        archive.writestr("samples/1.json", "[]" * 5000)
    with open_input(log) as handle, zipfile.ZipFile(handle) as archive:
        assert archive.read("samples/1.json") == b"[]" * 5000
    assert ledger._read == {str(log): {hashlib.sha256(log.read_bytes()).hexdigest()}}


def test_a_touched_file_of_the_same_bytes_gets_its_recorded_time_back(tmp_path: Path) -> None:
    data = tmp_path / "log.jsonl"
    data.write_text('{"key": 1}\n')
    os.utime(data, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))
    recorded = ledger.write(tmp_path / "staged", [str(data)], {})
    os.utime(data)  # touch
    changes, same = ledger.compare(recorded)
    assert changes == [] and ledger.restore_times(recorded, same) == [str(data)]
    assert data.stat().st_mtime_ns == 1_600_000_000 * 10**9
    backdated_edit(data, lambda text: text.replace(b"1", b"2"))  # an edit is never given a time
    changes, same = ledger.compare(recorded)
    assert [change.path for change in changes] == [str(data)] and same == {}


# --- staged files and the schema stamp (fast) ---------------------------------------------------------


def test_staged_file_edited_by_hand_is_written_again(tmp_path: Path) -> None:
    path, digest = staged_bytes(tmp_path, "workflow-record", b'{"runs": ["a"]}\n')
    path.write_bytes(b'{"runs": ["forged"]}\n')
    again, same = staged_bytes(tmp_path, "workflow-record", b'{"runs": ["a"]}\n')
    assert (again, same) == (path, digest)
    assert hashlib.sha256(again.read_bytes()).hexdigest() == digest


def test_schema_stamp_tells_a_date_from_the_string_of_its_repr(tmp_path: Path) -> None:
    schema = config_schema(REPO / "workflow/schemas/config.schema.yaml")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    as_string = json.loads(json.dumps(config))
    as_string["runs"]["gpt4_google"]["label"] = repr(datetime.date(2024, 1, 1))
    check_schema(schema, as_string, tmp_path)  # passes, and is remembered
    assert list(tmp_path.glob("schema-passed-*"))
    as_date = json.loads(json.dumps(config))
    as_date["runs"]["gpt4_google"]["label"] = datetime.date(2024, 1, 1)
    with pytest.raises(ConfigError, match="runs.gpt4_google.label"):
        check_schema(schema, as_date, tmp_path)


# --- the DAG (end to end) ---------------------------------------------------------------------------


@pytest.mark.e2e
def test_edited_and_backdated_responses_are_graded_again(default_run_copy: Path) -> None:
    workdir = default_run_copy
    responses = write_jsonl(workdir / "mine.jsonl", read_jsonl(GPT4_RESPONSES)[:12])
    runs = {"mine": {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "mine"}}
    write_config(workdir, {"datasets": {"mine": {"path": str(responses)}}, "runs": runs})
    snakemake(workdir)
    graded = {hashlib.sha256(r["response"].encode()).hexdigest() for r in read_jsonl(responses)}
    assert {g["response_sha256"] for g in read_jsonl(workdir / "results/mine/grades.jsonl")} == graded
    assert counted(workdir).returncode == 0

    def answer_nothing(data: bytes) -> bytes:
        records = [json.loads(line) for line in data.decode().splitlines()]
        return b"".join(json.dumps({**r, "response": "x"}).encode() + b"\n" for r in records)

    backdated_edit(responses, answer_nothing)
    refused = counted(workdir)
    assert refused.returncode == 1 and "mine.jsonl: its bytes changed" in refused.stderr, refused.stderr
    done = snakemake(workdir)
    assert "mine.jsonl: its bytes changed since the DAG last recorded them" in done.stderr
    regraded = read_jsonl(workdir / "results/mine/grades.jsonl")
    assert {g["response_sha256"] for g in regraded} == {hashlib.sha256(b"x").hexdigest()}
    assert summary(workdir, "mine")["metrics"] != {}
    assert counted(workdir).returncode == 0
    assert "Nothing to be done" in snakemake(workdir).stdout + snakemake(workdir).stderr


@pytest.mark.e2e
def test_edited_and_backdated_result_is_made_again_and_never_counted(default_run_copy: Path) -> None:
    workdir = default_run_copy
    snakemake(workdir)  # the ledger of a run made by this version
    path = workdir / "results/gpt4_google/summary.json"
    original = path.read_bytes()
    backdated_edit(path, lambda data: data.replace(b'"prompts": 541', b'"prompts": 540'))
    assert path.read_bytes() != original
    refused = counted(workdir)
    assert refused.returncode == 1 and "results/gpt4_google/summary.json" in refused.stderr
    snakemake(workdir)
    assert path.read_bytes() == original
    assert counted(workdir).returncode == 0


@pytest.mark.e2e
def test_result_deleted_by_hand_is_never_counted_and_is_made_again(default_run_copy: Path) -> None:
    """Snakemake does not make a missing file again while the files made from it are there: a
    run's grades deleted by hand, its summary kept, must not leave the run counted."""
    workdir = default_run_copy
    snakemake(workdir)  # the ledger of a run made by this version
    grades = workdir / "results/gpt4_google/grades.jsonl"
    original = grades.read_bytes()
    grades.unlink()
    refused = counted(workdir)
    assert refused.returncode == 1, refused.stderr
    assert "results/gpt4_google/grades.jsonl: gone since the DAG last recorded it" in refused.stderr
    done = snakemake(workdir)
    assert "grades.jsonl: gone since the DAG last recorded it: made again" in done.stderr
    assert grades.read_bytes() == original
    assert counted(workdir).returncode == 0
    # A fetched copy is not a result: gone, it is fetched again (checked by its pin) when needed.
    (workdir / "resources/data/gpt4_responses.jsonl").unlink()
    assert counted(workdir).returncode == 0
    assert "gone" not in snakemake(workdir).stderr and grades.read_bytes() == original


@pytest.mark.e2e
def test_staged_workflow_record_edited_by_hand_never_reaches_the_manifest(default_run_copy: Path) -> None:
    workdir = default_run_copy
    snakemake(workdir)
    (staged,) = (workdir / ".snakemake/ifaudit").glob("workflow-record-*.json")
    backdated_edit(staged, lambda data: data.replace(b'"gpt4_google"', b'"forged_run"'))
    (workdir / "results/MANIFEST.json").unlink()
    snakemake(workdir)
    record = json.loads((workdir / "results/MANIFEST.json").read_text())
    assert record["runs"] == ["gpt4_google"]
    assert hashlib.sha256(staged.read_bytes()).hexdigest() in staged.name


def test_bundle_refuses_results_whose_bytes_changed_since_the_dag(tmp_path: Path, monkeypatch) -> None:
    from ifaudit.core.errors import VerificationError
    from ifaudit.steps.artifact.bundle import BundleRequest, make_bundle

    monkeypatch.chdir(tmp_path)
    summary_file = Path("results/run/summary.json")
    summary_file.parent.mkdir(parents=True)
    summary_file.write_text('{"counted": true}\n')
    ledger.write(Path(".snakemake/ifaudit"), [str(summary_file)], {})
    backdated_edit(summary_file, lambda data: data.replace(b"true", b"false"))
    request = BundleRequest(project=tmp_path, results=tmp_path / "results", resources=tmp_path, out=tmp_path / "b")
    with pytest.raises(VerificationError, match="results/run/summary.json: its bytes changed .* before bundling"):
        make_bundle(request)
    assert not (tmp_path / "b").exists()
