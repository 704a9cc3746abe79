"""Checker registries: the pinned upstream grader, or the labelled registry stand-in.

A registry maps instruction ids to checker classes with upstream's interface
(`build_description(**kwargs)`, `get_instruction_args()`, `check_following(text)`). Which one
graded is part of every output: the stand-in is recorded as `upstream: false` and can never
satisfy a request for the pinned upstream.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ifaudit.io.canonical import sha256_file
from ifaudit.io.closure import PACKAGE_ROOT, import_closure, imported_modules
from ifaudit.core.errors import InputError, VerificationError
from ifaudit.core.identity import GRADER_CHOICES, GraderIdentity, GraderKind
from ifaudit.io.timelimits import disable_time_limits

if TYPE_CHECKING:  # ifaudit.io.remote.pins (HTTP, archives) is imported by the one loader that needs it
    from ifaudit.io.remote.pins import Pin
    from ifaudit.io.remote.sources import Source

UPSTREAM, STAND_IN = GRADER_CHOICES
OWN_REGISTRIES = {
    "arabic_inception": "ifaudit.checkers.arabic.inception_registry",
    "arabic_hf": "ifaudit.checkers.arabic.hf_registry",
}
# The one strict and loose driver (loose variants, the reset of randomness): its own code decides
# every grader's verdicts, so its file is part of every registry's identity. (Its whole import
# closure would reach the HTTP client and the writers, and every edit there would change it.)
DRIVER = "ifaudit.tasks.grading"

STAND_IN_PACKAGE = "if-verifiable"
STAND_IN_VERSION = "0.1.2"
STAND_IN_MODULE = "if_verifiable.ifeval"

# Which installed distributions a registry's verdicts can depend on is read from the imports of
# the files that decide them (docs/environment_sensitivity.md), plus what a verdict reaches through
# another distribution's code: nltk's tokenizers run on `regex` (nltk 3.10.3's RegexpTokenizer
# does: sentinel nltk_words_nfd_accents). nltk's other requirements (click, joblib, tqdm) serve
# no tokenizer, and langdetect's (six) is a Python 2 shim. ifaudit itself is never one: its code
# is in file_sha256, file by file, which its version would not tell.
REACHED_THROUGH = {"nltk": ("regex",)}
OWN_DISTRIBUTION = "ifaudit"


@dataclass(frozen=True)
class CheckerRegistry:
    name: str
    version: str
    kind: GraderKind  # UPSTREAM, STAND_IN or OWN
    instructions: Mapping[str, type] = field(repr=False)
    file_sha256: Mapping[str, str] = field(repr=False)
    # The distributions whose code its verdicts run through (imported by its files or the driver).
    distributions: tuple[str, ...] = ()

    @property
    def upstream(self) -> bool:
        return self.kind is GraderKind.UPSTREAM

    def identity(self) -> GraderIdentity:
        """What every graded record carries, so no output can hide which grader made it."""
        return GraderIdentity(self.kind, self.name, self.version)


def driver_path() -> Path:
    return Path(importlib.import_module(DRIVER).__file__ or "")


def driver_identity() -> dict[str, str]:
    path = driver_path()
    return {f"ifaudit/tasks/{path.name}": sha256_file(path)}


def imported_top_level(path: Path) -> set[str]:
    """The top-level names of the absolute imports in `path`'s source, wherever they stand
    (in functions and try blocks too)."""
    return {name.partition(".")[0] for name in imported_modules(path)}


def verdict_distributions(files: Iterable[Path], own_packages: Iterable[str] = ()) -> tuple[str, ...]:
    """The distributions the code in `files` imports, and those reached through them
    (REACHED_THROUGH), sorted; the standard library, ifaudit and `own_packages` (a grader's own
    modules, hashed in its file_sha256) left out. A name no installed distribution provides is
    kept as it is, so the fingerprint says "not installed" rather than hiding it."""
    skip = {OWN_DISTRIBUTION.replace("-", "_"), *own_packages}
    # here: every command imports this module, few ask for distributions (importlib.metadata, 25 ms)
    from ifaudit.io.distributions import distributions_providing

    modules = {name for path in files for name in imported_top_level(path)} - skip - set(sys.stdlib_module_names)
    provided = distributions_providing(modules)
    found: set[str] = set()
    for module in modules:
        found.update(provided.get(module, [module]))
    found.discard(OWN_DISTRIBUTION)
    for name in list(found):
        found.update(REACHED_THROUGH.get(name, ()))
    return tuple(sorted(found))


def load_upstream(pin: Pin, cache_root: Path, sources: list[Source]) -> CheckerRegistry:
    from ifaudit.io.remote.pins import materialize
    from ifaudit.io.remote.verified_import import importable_from_pin

    folder = materialize(pin, cache_root, sources)
    module_name = f"{pin.package}.instructions_registry"
    importable_from_pin(pin, folder)
    module = importlib.import_module(module_name)
    loaded_files = []
    for name in (module_name, f"{pin.package}.instructions", f"{pin.package}.instructions_util"):
        loaded = Path(sys.modules[name].__file__ or "").resolve()
        if not loaded.is_relative_to(folder.resolve()):
            raise VerificationError(f"{name} was imported from {loaded}, not from the verified pin at {folder}")
        loaded_files.append(loaded)
    return upstream_registry(pin, module.INSTRUCTION_DICT, loaded_files, [pin.package])


def upstream_registry(
    pin: Pin, instructions: Mapping[str, type], loaded_files: Sequence[Path], own_packages: Sequence[str]
) -> CheckerRegistry:
    """A pinned upstream grader's registry: its code named by the pin's file hashes and the
    driver's, its distributions read from the files it loaded (its own packages left out)."""
    return CheckerRegistry(
        name=pin.name,
        version=pin.commit,
        kind=GraderKind.UPSTREAM,
        instructions=instructions,
        file_sha256={**pin.file_hashes(), **driver_identity()},
        distributions=verdict_distributions([*loaded_files, driver_path()], own_packages=own_packages),
    )


def _import_past_package_init(name: str) -> types.ModuleType:
    """Import `name` with its top-level package's __init__ left unrun: if_verifiable's imports its
    dataset API (datasets, pandas: ≈ 1.5 s of CPU in every process that grades with the stand-in),
    which no checker uses; its `ifeval` subpackage imports only itself, langdetect, nltk and
    immutabledict. The package is left in sys.modules as an empty namespace, which nothing in
    ifaudit asks for more of."""
    import importlib.util

    top = name.partition(".")[0]
    if top not in sys.modules:
        spec = importlib.util.find_spec(top)
        if spec is None or spec.submodule_search_locations is None:
            raise InputError(f"the stand-in grader's package {top} is not installed as a package")
        sys.modules[top] = importlib.util.module_from_spec(spec)
    return importlib.import_module(name)


def load_stand_in() -> CheckerRegistry:
    import importlib.metadata

    try:
        version = importlib.metadata.version(STAND_IN_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(
            f"the stand-in grader needs {STAND_IN_PACKAGE}=={STAND_IN_VERSION} installed",
            hint="`make run RUNTIME=stand-in` runs in requirements-stand-in.lock's environment, which has it",
        ) from None
    if version != STAND_IN_VERSION:
        raise VerificationError(f"stand-in grader: {STAND_IN_PACKAGE} {version} installed, {STAND_IN_VERSION} pinned")
    module = _import_past_package_init(f"{STAND_IN_MODULE}.instructions_registry")
    package_dir = Path(module.__file__ or "").parent
    prefix = STAND_IN_MODULE.replace(".", "/")
    files = sorted(package_dir.glob("*.py"))
    hashes = {f"{prefix}/{f.name}": sha256_file(f) for f in files}
    return CheckerRegistry(
        name=STAND_IN_PACKAGE,
        version=version,
        kind=GraderKind.STAND_IN,
        instructions=module.INSTRUCTION_DICT,
        file_sha256={**hashes, **driver_identity()},
        distributions=verdict_distributions([*files, driver_path()]),
    )


def load_own(registry: str) -> CheckerRegistry:
    """One of our registries, identified by ifaudit's version and the sha256 of every module its
    verdicts depend on: its import closure and the driver's."""
    from ifaudit import __version__

    module = importlib.import_module(OWN_REGISTRIES[registry])
    closure = import_closure(module.__name__)
    return CheckerRegistry(
        name=module.__name__,
        version=__version__,
        kind=GraderKind.OWN,
        instructions=module.INSTRUCTION_DICT,
        file_sha256={**closure, **driver_identity()},
        distributions=verdict_distributions([*(PACKAGE_ROOT.parent / path for path in closure), driver_path()]),
    )


def load_registry(
    registry: str, grader: str, pin: Pin | None, cache_root: Path, sources: list[Source]
) -> CheckerRegistry:
    """A task's registry by name: one of ours (no pin needed), or Google's as `grader` says.

    Loading a registry is what makes a process a grading process, so this is also where the
    libraries' wall-clock limits are turned off (ifaudit.io.timelimits)."""
    disable_time_limits()
    if registry in OWN_REGISTRIES:
        return load_own(registry)
    if pin is None:
        raise InputError("Google's grader needs its pin file", field="pin")
    return load_grader(grader, pin, cache_root, sources)


def load_grader(kind: str, pin: Pin, cache_root: Path, sources: list[Source]) -> CheckerRegistry:
    if kind == UPSTREAM:
        return load_upstream(pin, cache_root, sources)
    if kind == STAND_IN:
        return load_stand_in()
    raise InputError(f"unknown grader {kind!r}; choose one of {', '.join(GRADER_CHOICES)}", field="grader")
