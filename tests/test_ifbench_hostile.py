"""IFBench's pinned grader in a hostile environment: a reachable network, a tampered NLTK resource,
a pinned file that would use spaCy for a verdict, a pickle that would run code, the wrong pin."""

from __future__ import annotations

import io
import pickle
import shutil
import socket
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import NLTK_MIRROR, REPO, SHARED, grade_args, read_jsonl, run_cli, write_jsonl
from test_ifbench_reference import PROMPTS, SAMPLE_OUTPUTS, keyed_sample_outputs

from ifaudit.core.errors import VerificationError

C6767A1 = SHARED / "upstream" / "allenai_ifbench" / "c6767a19bd82ac0536cab950f2f8f6bcc6fabe7c"


@pytest.fixture
def listening_proxy() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback port that accepts every connection and records what was sent: the network,
    reachable. Whatever reaches it is a request the grader made."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(2)
                try:
                    seen.append(connection.recv(4096))
                except OSError:
                    seen.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", seen
    server.close()
    thread.join(timeout=5)


def few_sample_outputs(tmp_path: Path) -> Path:
    """Ten sample outputs, among them one of each checker that calls nltk.download while grading."""
    rows = read_jsonl(keyed_sample_outputs("294", tmp_path / "all.jsonl"))
    return write_jsonl(tmp_path / "few.jsonl", rows[:40])


@pytest.mark.parametrize("version", ["c6767a1", "db69a6f"])
def test_grader_reaches_no_network_that_is_reachable(
    version: str, listening_proxy: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    proxy, seen = listening_proxy
    resources = tmp_path / "resources"  # fresh: the grader looks for its NLTK data at import
    out = tmp_path / "grades.jsonl"
    args = grade_args(PROMPTS["294"], few_sample_outputs(tmp_path), out, "--task", "ifbench", "--offline")
    proxies = {name: proxy for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")}
    # nltk >= 3.10.4 fetches through a proxy only when told to: told, the proxy is the network
    reachable = {**proxies, "NLTK_ALLOW_PROXIED_URLOPEN": "1"}
    run_cli([*args, "--grader", "upstream", "--grader-version", version], resources, **reachable)
    assert len(read_jsonl(out)) == 40
    assert seen == []


def test_pinned_package_folder_gets_no_nltk_data_folder(tmp_path: Path) -> None:
    resources = tmp_path / "resources"
    out = tmp_path / "grades.jsonl"
    args = grade_args(PROMPTS["294"], few_sample_outputs(tmp_path), out, "--task", "ifbench", "--offline")
    run_cli([*args, "--grader", "upstream", "--grader-version", "db69a6f"], resources)
    pinned = resources / "vendor" / "allenai_ifbench" / "db69a6f05689830b0068b8f1529ebcfd2f3b164c"
    assert (pinned / "ifbench" / "instructions.py").is_file()
    assert sorted(p.name for p in pinned.rglob("*") if p.is_dir() and p.name != "__pycache__") == ["ifbench"]


def test_spacy_beyond_the_import_time_download_is_refused() -> None:
    from ifaudit.tasks.ifbench_grader import spacy_unused_for_verdicts

    source = (C6767A1 / "instructions.py").read_text(encoding="utf-8")
    assert spacy_unused_for_verdicts(source, "instructions.py") is True
    assert spacy_unused_for_verdicts((C6767A1 / "instructions_util.py").read_text(encoding="utf-8"), "u.py") is False
    used = source + "\n\ndef _verdict(text):\n\treturn download('en_core_web_sm')\n"
    with pytest.raises(VerificationError, match=r"instructions\.py: line \d+ uses spaCy's 'download'"):
        spacy_unused_for_verdicts(used, "instructions.py")
    kept = source.replace("download('en_core_web_sm')", "model = download('en_core_web_sm')")
    with pytest.raises(VerificationError, match="beyond a dropped top-level call"):
        spacy_unused_for_verdicts(kept, "instructions.py")
    # `import spacy.cli` binds `spacy`, not `spacy.cli`: a checker's `spacy.load` is a use.
    dotted = source + "\nimport spacy.cli\n\ndef _verdict(text):\n\treturn spacy.load('en_core_web_sm')(text)\n"
    with pytest.raises(VerificationError, match=r"uses spaCy's 'spacy'"):
        spacy_unused_for_verdicts(dotted, "instructions.py")


def test_nltk_resource_with_other_bytes_is_refused(tmp_path: Path) -> None:
    mirror = tmp_path / "nltk"
    shutil.copytree(NLTK_MIRROR, mirror)
    stopwords = mirror / "corpora" / "stopwords" / "english"
    stopwords.chmod(0o644)
    stopwords.write_text("\n".join(stopwords.read_text().splitlines()[:179]) + "\n")  # the 2023 list's length
    out = tmp_path / "grades.jsonl"
    args = grade_args(PROMPTS["294"], few_sample_outputs(tmp_path), out, "--task", "ifbench", "--offline")
    done = run_cli(
        [*args, "--grader", "upstream"], tmp_path / "resources", check=False, IFAUDIT_NLTK_MIRROR=str(mirror)
    )
    assert done.returncode != 0 and not out.exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "corpora/stopwords/english: no source has the pinned bytes" in lines[0]
    assert str(stopwords) in lines[0]


def test_tagger_pickle_naming_a_class_is_refused() -> None:
    from ifaudit.io.remote.nltk_resources import TAGGER_PICKLE, perceptron_json

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr(TAGGER_PICKLE, pickle.dumps(({}, {}, {shutil.rmtree})))
    with pytest.raises(VerificationError, match="refusing shutil.rmtree"):
        perceptron_json(archive.getvalue())


def test_ifbench_refuses_the_registry_stand_in(tmp_path: Path) -> None:
    args = grade_args(PROMPTS["294"], SAMPLE_OUTPUTS, tmp_path / "g.jsonl", "--task", "ifbench", grader="stand-in")
    done = run_cli(args, tmp_path / "resources", check=False)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "ifaudit: error: field 'grader': task ifbench has no registry stand-in: it grades with the pinned upstream grader only"
    ]


def test_ifbench_refuses_another_graders_pin(tmp_path: Path) -> None:
    google = REPO / "vendor" / "google_ifeval" / "pin.toml"
    args = grade_args(PROMPTS["294"], SAMPLE_OUTPUTS, tmp_path / "g.jsonl", "--task", "ifbench", "--pin", str(google))
    done = run_cli([*args, "--grader", "upstream"], tmp_path / "resources", check=False)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(google) in lines[0] and "not allenai/IFBench" in lines[0]


def test_ifbench_verdict_dependencies_are_pinned_exactly_as_in_the_locks() -> None:
    """emoji's database and syllapy's counts decide verdicts of IFBench's checkers: pinned as nltk is."""
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for name in ("emoji", "syllapy"):
        pin = next(spec for spec in declared if spec.split("==")[0] == name)
        assert "==" in pin
        for lock in ("requirements.lock", "requirements-runtime.lock", "requirements-stand-in.lock"):
            assert f"\n{pin} \\" in (REPO / lock).read_text(), f"{pin} is not what {lock} holds"
