"""Make (or check) src/ifaudit/tasks/unicode_exposure.json: per Unicode version, the code points
whose properties, as the graders read them, differ from the reference version's (Unicode 14.0,
Python 3.11's).

    python tools/unicode_exposure.py write    # rewrite the data from the interpreters found
    python tools/unicode_exposure.py check    # regenerate in memory; exit 1 unless byte for byte equal
    python tools/unicode_exposure.py check --python /path/to/python3.13 ...   # name the interpreters

Each interpreter (Python 3.11, 3.12 and 3.13 by default, found on PATH or under ~/.pyenv) runs
PROBE below over every code point, with nothing but its own standard library: `unicodedata`, the
`str` methods and `re`. A code point is exposed under a version when any of the values PROBE
records for it there differs from the reference interpreter's. Two interpreters of one Unicode
version (3.11.2 and 3.11.7, say) must record the same values, or the script stops. The file holds
no interpreter's patch version and no time, so any interpreters of the same Unicode versions
regenerate it byte for byte.

What PROBE records is what the graders' code reads of a character (docs/environment_sensitivity.md
says how that list was established): the general category; `isalpha`, `isalnum`, `isdigit`,
`isdecimal`, `isnumeric`, `isspace`, `isupper`, `islower`, `istitle`; the full case mappings
(`lower`, `upper`, `title`, `casefold`) and whether the character is cased or case-ignorable (read
off the final-sigma rule of `lower`); line breaks (`splitlines`); what stdlib `re` accepts as `\\w`,
`\\d` and `\\s`; what its case-insensitive matching compares (`_sre.unicode_tolower`,
`_sre.unicode_iscased` and `re._casefix`'s extra cases, exactly what `re`'s compiler reads); and
`unicodedata`'s decimal, digit and numeric values, combining class, decomposition and the four
normal forms of the character alone.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "ifaudit" / "tasks" / "unicode_exposure.json"
REFERENCE = "14.0.0"
DEFAULT_PYTHONS = ("3.11", "3.12", "3.13")

PROPERTIES = (
    "unicodedata.category",
    "str.isalpha",
    "str.isalnum",
    "str.isdigit",
    "str.isdecimal",
    "str.isnumeric",
    "str.isspace",
    "str.isupper",
    "str.islower",
    "str.istitle",
    "str.lower",
    "str.upper",
    "str.title",
    "str.casefold",
    "cased (final sigma of str.lower after it)",
    "case-ignorable (final sigma of str.lower before it, alone)",
    "case-ignorable (final sigma of str.lower before it, after a cased letter)",
    "line break (str.splitlines)",
    "re \\w",
    "re \\d",
    "re \\s",
    "re IGNORECASE: _sre.unicode_tolower",
    "re IGNORECASE: _sre.unicode_iscased",
    "re IGNORECASE: re._casefix extra cases",
    "unicodedata.decimal",
    "unicodedata.digit",
    "unicodedata.numeric",
    "unicodedata.combining",
    "unicodedata.decomposition",
    "unicodedata.normalize NFC",
    "unicodedata.normalize NFD",
    "unicodedata.normalize NFKC",
    "unicodedata.normalize NFKD",
)

# Run by each interpreter: one record per code point (mappings relative to the code point, so that
# neighbours with the same behaviour share a record), as runs of equal records.
PROBE = r"""
import json, re, sys, unicodedata, _sre
from re import _casefix

WORD, DIGIT, SPACE = re.compile(r"\w"), re.compile(r"\d"), re.compile(r"\s")


def relative(text, cp):
    return [ord(char) - cp for char in text]


def record(cp):
    c = chr(cp)
    return [
        unicodedata.category(c),
        c.isalpha(), c.isalnum(), c.isdigit(), c.isdecimal(), c.isnumeric(), c.isspace(),
        c.isupper(), c.islower(), c.istitle(),
        relative(c.lower(), cp), relative(c.upper(), cp), relative(c.title(), cp), relative(c.casefold(), cp),
        ("A\u03a3" + c).lower()[1], (c + "\u03a3").lower()[-1], ("A" + c + "\u03a3").lower()[-1],
        len(("a" + c + "b").splitlines()),
        bool(WORD.fullmatch(c)), bool(DIGIT.fullmatch(c)), bool(SPACE.fullmatch(c)),
        _sre.unicode_tolower(cp) - cp, _sre.unicode_iscased(cp),
        [other - cp for other in _casefix._EXTRA_CASES.get(cp, ())],
        unicodedata.decimal(c, None), unicodedata.digit(c, None), unicodedata.numeric(c, None),
        unicodedata.combining(c), unicodedata.decomposition(c),
        *(relative(unicodedata.normalize(form, c), cp) for form in ("NFC", "NFD", "NFKC", "NFKD")),
    ]


runs = []  # records compared as lists, each run's written as JSON once (not every code point's)
for cp in range(sys.maxunicode + 1):
    value = record(cp)
    if runs and runs[-1][2] == value:
        runs[-1][1] = cp
    else:
        runs.append([cp, cp, value])
runs = [[first, last, json.dumps(value, ensure_ascii=True)] for first, last, value in runs]
json.dump({"unicode": unicodedata.unidata_version, "runs": runs}, sys.stdout)
"""


def find_pythons() -> list[str]:
    """python3.11, 3.12 and 3.13: on PATH (a pyenv shim that does not run is passed over), else pyenv's."""
    found = []
    for version in DEFAULT_PYTHONS:
        candidates = [shutil.which(f"python{version}")]
        candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
        python = next(
            (c for c in candidates if c and subprocess.run([c, "-c", ""], capture_output=True).returncode == 0), None
        )
        if python is None:
            raise SystemExit(f"unicode_exposure: no python{version} on PATH or under ~/.pyenv; name it with --python")
        found.append(python)
    return found


def probe(python: str) -> tuple[str, list[str]]:
    """The Unicode version of `python` and its record of every code point."""
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"unicode_exposure: the probe failed in {python}:\n{done.stderr}")
    measured = json.loads(done.stdout)
    records: list[str] = []
    for first, last, value in measured["runs"]:
        records.extend([value] * (last - first + 1))
    return measured["unicode"], records


def ranges(code_points: list[int]) -> list[str]:
    """Sorted code points as UCD ranges: `1DF25..1DF2A`, or `1DF25` alone."""
    spans: list[list[int]] = []
    for cp in code_points:
        if spans and spans[-1][1] == cp - 1:
            spans[-1][1] = cp
        else:
            spans.append([cp, cp])
    return [f"{a:04X}" if a == b else f"{a:04X}..{b:04X}" for a, b in spans]


def exposure(pythons: list[str]) -> bytes:
    by_version: dict[str, tuple[str, list[str]]] = {}
    for python in pythons:
        version, records = probe(python)
        if version in by_version and by_version[version][1] != records:
            raise SystemExit(f"unicode_exposure: {python} and {by_version[version][0]} (both Unicode {version}) differ")
        by_version.setdefault(version, (python, records))
    if REFERENCE not in by_version:
        raise SystemExit(f"unicode_exposure: no interpreter of the reference Unicode {REFERENCE} among {pythons}")
    reference = by_version[REFERENCE][1]
    exposed = {}
    for version, (_, records) in sorted(by_version.items()):
        changed = [cp for cp, (ours, theirs) in enumerate(zip(reference, records, strict=True)) if ours != theirs]
        exposed[version] = {"code_points": len(changed), "ranges": ranges(changed)}
    data = {
        "about": "Per Unicode version, the code points whose properties as the graders read them differ from the "
        f"reference Unicode {REFERENCE} (Python 3.11). Made by tools/unicode_exposure.py; see "
        "docs/environment_sensitivity.md.",
        "exposed": exposed,
        "properties": list(PROPERTIES),
        "reference": REFERENCE,
    }
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, indent=1)
    return (text + "\n").encode("utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("write", "check"))
    parser.add_argument("--python", action="append", help="an interpreter to probe (default: 3.11, 3.12, 3.13)")
    args = parser.parse_args()
    made = exposure(args.python or find_pythons())
    if args.action == "write":
        DATA.write_bytes(made)
        print(f"wrote {DATA}", file=sys.stderr)
        return 0
    if DATA.read_bytes() != made:
        print(
            f"unicode_exposure: {DATA} differs from what the interpreters give; run `write` and review", file=sys.stderr
        )
        return 1
    print(f"{DATA} regenerated byte for byte", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
