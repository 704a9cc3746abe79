"""Lightblue's pinned M-IFEval grader, loaded without editing a byte, for one language at a time.

The pinned registry (`instructions_registry.py`) imports the checker modules of all four
languages, so grading French or Japanese loads the Spanish ones too, and they load two spaCy
models at import (`spacy.load`), which no pin can hold yet. Nothing is patched in the files:

- The pinned source is read first (ast): the import closure, within the pin, of the graded
  language's checker module (`instructions/<lang>_instructions.py`) must not import spaCy. Then no
  verdict of that language can depend on spaCy, and only then is a stand-in `spacy` put in
  sys.modules for the import: its `load` records the model asked for and returns an object that
  refuses any use. A language whose closure imports spaCy (Spanish) is refused, naming the models
  its source loads.
- The registry is cut to the graded language's ids (`fr:`, `ja:`), and every class it maps to must
  be defined in that language's module: a prompt with another language's id is refused as unknown.
- `nltk.download` (the French utilities call it at import) is refused for the process, as for
  IFBench: nothing is fetched, it returns False. The NLTK data the checkers read is pinned and
  materialized beforehand (ifaudit.tasks.mifeval).
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ifaudit.core.errors import InputError, VerificationError
from ifaudit.tasks.graders import CheckerRegistry, upstream_registry
from ifaudit.tasks.ifbench_grader import refuse_nltk_downloads

if TYPE_CHECKING:
    from ifaudit.io.remote.pins import Pin
    from ifaudit.io.remote.sources import Source

REGISTRY_MODULE = "instructions_registry"
# The namespace packages the pinned files import each other through (upstream has no __init__.py).
OWN_PACKAGES = ("instructions_registry", "instructions", "instruction_utils")
LANGUAGES = ("en", "es", "fr", "ja")

# What the stand-in saw, for the record (tests read it): the spaCy models the import asked for.
SPACY_LOADS: list[str] = []


def checker_module(language: str) -> str:
    return f"instructions.{language}_instructions"


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def pinned_modules(pin: Pin, folder: Path) -> dict[str, ast.Module]:
    """Every pinned Python file, parsed, by module name (upstream's invalid escapes in regular
    expressions warn when compiled; parsing them is not the place to say so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return {
            _module_name(file.path): ast.parse((folder / file.path).read_bytes(), file.path)
            for file in pin.files
            if file.path.endswith(".py")
        }


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


def closure(modules: Mapping[str, ast.Module], start: str) -> list[str]:
    """The pinned modules `start` imports, directly or through others, itself first."""
    seen, todo = [start], [start]
    while todo:
        for name in sorted(_imports(modules[todo.pop()])):
            if name in modules and name not in seen:
                seen.append(name)
                todo.append(name)
    return seen


def spacy_models(tree: ast.Module) -> list[str]:
    """The models a module loads with `spacy.load("...")`, in source order."""
    return [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "load"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "spacy"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def imports_spacy(tree: ast.Module) -> bool:
    return any(name.split(".")[0] == "spacy" for name in _imports(tree))


def spacy_free(modules: Mapping[str, ast.Module], language: str) -> bool:
    """Can spaCy decide a verdict of `language`? Refused (naming the models) if the language's
    checkers reach it; True if some other pinned module imports it, so it must be stood in."""
    reached = [name for name in closure(modules, checker_module(language)) if imports_spacy(modules[name])]
    if reached:
        models = [model for name in reached for model in spacy_models(modules[name])]
        files = ", ".join(name.replace(".", "/") + ".py" for name in reached)
        raise InputError(
            f"M-IFEval's {language} checkers need spaCy's {' and '.join(models) or 'models'} "
            f"({files}), which no reachable "
            "registry serves and no pin holds yet (docs/mifeval.md)",
            field="task",
        )
    return any(imports_spacy(tree) for tree in modules.values())


class UnpinnedModel:
    """What the stand-in's `spacy.load` returns: any use of it is refused, so a verdict can never
    silently come from a missing model."""

    def __init__(self, model: str) -> None:
        self._model = model

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise VerificationError(f"spaCy's {self._model} was used while grading; it is not pinned (docs/mifeval.md)")

    def __getattr__(self, name: str) -> Any:
        raise VerificationError(f"spaCy's {self._model}.{name} was used while grading; it is not pinned")


def _spacy_stand_in() -> types.ModuleType:
    spacy = types.ModuleType("spacy", "ifaudit's stand-in for spaCy's import-time model loads (M-IFEval)")

    def load(model: str, *args: Any, **kwargs: Any) -> UnpinnedModel:
        SPACY_LOADS.append(model)
        return UnpinnedModel(model)

    spacy.load = load  # type: ignore[attr-defined]
    return spacy


@contextmanager
def _spacy_stood_in(stand_in: bool) -> Iterator[None]:
    saved = sys.modules.get("spacy")
    if stand_in:
        sys.modules["spacy"] = _spacy_stand_in()
    try:
        yield
    finally:
        if stand_in:
            if saved is None:
                sys.modules.pop("spacy", None)
            else:
                sys.modules["spacy"] = saved


@contextmanager
def _own_names_from(folder: Path) -> Iterator[None]:
    """Upstream's `instructions/` and `instruction_utils/` are namespace packages (no __init__.py),
    which a regular module of the same name anywhere on sys.path wins over (IFBench's flat
    `instructions.py`, once its grader was loaded in the process): while the pinned files import,
    no other entry offering one of those names is on the path."""
    saved = list(sys.path)

    def offers_own_name(entry: str) -> bool:
        where = Path(entry)
        return any(
            (where / f"{name}.py").is_file() or (where / name / "__init__.py").is_file() for name in OWN_PACKAGES
        )

    sys.path[:] = [entry for entry in saved if entry == str(folder) or not offers_own_name(entry)]
    try:
        yield
    finally:
        sys.path[:] = saved


def _clear_foreign(folder: Path) -> None:
    """Forget modules of the same names imported from elsewhere (IFBench's flat layout has an
    `instructions` module too), so the pinned files are the ones imported."""
    for name in list(sys.modules):
        if name.split(".")[0] in OWN_PACKAGES:
            origin = getattr(sys.modules[name], "__file__", None)
            if origin is None or not Path(origin).resolve().is_relative_to(folder):
                del sys.modules[name]


def language_instructions(instructions: Mapping[str, type], language: str) -> dict[str, type]:
    """The registry's ids of `language`, each mapped to a class its own checker module defines."""
    prefix = f"{language}:"
    chosen = {name: cls for name, cls in instructions.items() if name.startswith(prefix)}
    for name, cls in chosen.items():
        if cls.__module__ != checker_module(language):
            raise VerificationError(
                f"{name} is graded by {cls.__module__}.{cls.__name__}, not M-IFEval's {language} module"
            )
    return chosen


def load_mifeval(pin: Pin, language: str, cache_root: Path, sources: list[Source]) -> CheckerRegistry:
    """The pinned grader's registry of `language`, from its verified files (materialized if needed)."""
    from ifaudit.io.remote.pins import materialize
    from ifaudit.io.remote.verified_import import importable_from_pin

    folder = materialize(pin, cache_root, sources).resolve()
    modules = pinned_modules(pin, folder)
    stand_in = spacy_free(modules, language)
    loaded = [name for name in modules if name != "evaluation_main"]
    refuse_nltk_downloads()
    _clear_foreign(folder)
    importable_from_pin(pin, folder)
    with _own_names_from(folder), _spacy_stood_in(stand_in):
        registry = importlib.import_module(REGISTRY_MODULE)
    files = []
    for name in loaded:
        path = Path(sys.modules[name].__file__ or "").resolve()
        if path != folder / (name.replace(".", "/") + ".py"):
            raise VerificationError(f"{name} was imported from {path}, not from the verified pin at {folder}")
        files.append(path)
    own = [*OWN_PACKAGES, *(["spacy"] if stand_in else [])]
    return upstream_registry(pin, language_instructions(registry.INSTRUCTION_DICT, language), files, own)
