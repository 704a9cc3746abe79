"""One source abstraction for datasets and grader pins: one spec parser, one order, and the
workflow's `fetch` rule passing the package's order rather than a copy of it."""

from __future__ import annotations

import shlex
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import DATA, REPO
from ifaudit.core.errors import InputError
from ifaudit.io.remote.fetch import config_sources
from ifaudit.io.remote.pins import default_sources, load_pin
from ifaudit.io.remote.sources import (
    Archive,
    GitCheckout,
    Holds,
    HubFile,
    HubFolder,
    LocalFile,
    LocalFolder,
    Places,
    UrlTemplate,
    Wanted,
    WebFile,
    dataset_specs,
    parse_source,
)

EVERY_KEY = {
    "path": "mine.jsonl",
    "mirror": "ifeval/x.jsonl",
    "url": "https://example.org/x.jsonl",
    "hf": {"repo": "o/n", "revision": "abc", "file": "x.jsonl"},
}


def test_a_spec_naming_one_file() -> None:
    assert parse_source("https://example.org/a.jsonl", Holds.FILE) == WebFile("https://example.org/a.jsonl")
    assert parse_source("hf://datasets/google/IFEval@966cd89/ifeval_input_data.jsonl", Holds.FILE) == HubFile(
        "google/IFEval", "966cd89", "ifeval_input_data.jsonl"
    )
    assert parse_source("data/x.jsonl", Holds.FILE) == LocalFile(Path("data/x.jsonl"))
    assert parse_source("file:data/x.jsonl", Holds.FILE) == LocalFile(Path("data/x.jsonl"))
    for malformed in ("hf://google/IFEval", "hf://datasets/google/IFEval@966cd89"):
        with pytest.raises(InputError, match="hf://datasets/OWNER/NAME@REVISION/FILE"):
            parse_source(malformed, Holds.FILE)


def test_a_spec_naming_a_tree_of_pinned_files(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "clone/.git").mkdir(parents=True)
    (tmp_path / "snapshot.zip").write_bytes(b"")
    assert parse_source(str(tmp_path / "folder"), Holds.TREE) == LocalFolder(tmp_path / "folder")
    assert parse_source(str(tmp_path / "clone"), Holds.TREE) == GitCheckout(tmp_path / "clone")
    assert parse_source(str(tmp_path / "snapshot.zip"), Holds.TREE) == Archive(tmp_path / "snapshot.zip")
    assert parse_source("http://mirror/g/", Holds.TREE) == UrlTemplate("http://mirror/g/{path}")
    assert parse_source("http://mirror/{commit}/{path}", Holds.TREE) == UrlTemplate("http://mirror/{commit}/{path}")
    assert parse_source("hf://datasets/o/n@abc", Holds.TREE) == HubFolder("o/n", "abc", "")
    assert parse_source("hf://datasets/o/n@abc/grader", Holds.TREE) == HubFolder("o/n", "abc", "grader")
    with pytest.raises(InputError, match=r"hf://datasets/OWNER/NAME@REVISION\[/FOLDER\]"):
        parse_source("hf://o/n", Holds.TREE)
    with pytest.raises(InputError, match="grader source not found"):
        parse_source(str(tmp_path / "none"), Holds.TREE)


def test_a_zip_archive_gives_the_member_at_the_pinned_path(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "repo.zip", "w") as archive:  # laid out like GitHub's zip of a commit
        archive.writestr("repo-abc/pkg/checks.py", b"ANSWER = 42\n")
        archive.writestr("repo-abc/other/checks.py.orig", b"no\n")
    assert Archive(tmp_path / "repo.zip").read(Wanted("pkg/checks.py", "abc")) == b"ANSWER = 42\n"


def test_one_order_own_copies_then_mirrors_then_canonical() -> None:
    places = Places(own=("a", "b"), mirrors=("m",), canonical=("https://c", "hf://datasets/o/n@r/f"))
    assert places.in_order(offline=False) == ["a", "b", "m", "https://c", "hf://datasets/o/n@r/f"]
    assert places.in_order(offline=True) == ["a", "b", "m"]
    assert dataset_specs(EVERY_KEY, Path("/m"), offline=False) == [
        "mine.jsonl",
        "/m/ifeval/x.jsonl",
        "https://example.org/x.jsonl",
        "hf://datasets/o/n@abc/x.jsonl",
    ]
    assert dataset_specs(EVERY_KEY, None, offline=True) == ["mine.jsonl"]
    assert config_sources(EVERY_KEY, Path("/m"), offline=False) == [  # what `selfcheck` and `verify-bundle` fetch
        LocalFile(Path("mine.jsonl")),
        LocalFile(Path("/m/ifeval/x.jsonl")),
        WebFile("https://example.org/x.jsonl"),
        HubFile("o/n", "abc", "x.jsonl"),
    ]


def test_a_pins_sources_follow_the_same_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's --from, then the environment variable's, then the pin's mirrors that are
    present, then (unless offline) the canonical URL template."""
    mine, env, mirror = (tmp_path / name for name in ("mine", "env", "mirror"))
    for folder in (mine, env, mirror):
        folder.mkdir()
    pin_file = tmp_path / "pin.toml"
    pin_file.write_text(
        "\n".join(
            [
                'name = "t"',
                'repository = "https://example.invalid/t"',
                'commit = "abc"',
                'licence = "MIT"',
                'url_template = "https://example.invalid/{commit}/{path}"',
                'package = ""',
                'mirrors = ["mirror", "absent"]',
                "[[files]]",
                'path = "f.py"',
                "size = 1",
                f'sha256 = "{"0" * 64}"',
            ]
        )
    )
    pin = load_pin(pin_file)
    monkeypatch.setenv("IFAUDIT_GRADER_SOURCE", str(env))
    assert default_sources(pin, [str(mine)]) == [
        LocalFolder(mine),
        LocalFolder(env),
        LocalFolder(mirror),
        UrlTemplate("https://example.invalid/{commit}/{path}"),
    ]
    assert default_sources(pin, [str(mine)], offline=True)[-1] == LocalFolder(mirror)


@pytest.mark.e2e
def test_the_workflow_passes_the_packages_order(tmp_path: Path) -> None:
    """What the `fetch` rule gives `ifaudit fetch --from` is dataset_specs' order, with every kind
    of place configured (a dry run: nothing is fetched)."""
    from test_workflow import snakemake

    (tmp_path / "mine.jsonl").write_text("{}\n")
    spec = dict(EVERY_KEY, mirror="ifeval/input_data.jsonl")
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"offline": False, "datasets": {"every_place": spec}}))
    planned = snakemake(tmp_path, "--dry-run", "--printshellcmds", "resources/data/every_place.jsonl").stdout
    command = next(
        shlex.split(line[line.index("ifaudit fetch") :]) for line in planned.splitlines() if "ifaudit fetch" in line
    )
    given = [command[i + 1] for i, part in enumerate(command) if part == "--from"]
    assert given == dataset_specs(spec, DATA, offline=False)
    assert given[0] == "mine.jsonl" and given[-1].startswith("hf://")
    # No copy of the order's parts either: the hub spec is spelled only in the package.
    assert not [rule for rule in (REPO / "workflow/rules").glob("*.smk") if "hf://datasets" in rule.read_text()]
