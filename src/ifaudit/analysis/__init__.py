"""The analysis layer: a finished audit's results/ folder as pandas DataFrames, for notebooks and
papers (`pip install 'ifaudit[analysis]'`). Nothing in the pipeline imports it: the runtime
environment (`make run`'s, and the image) has no pandas.

Imported there, it stops with one line saying where pandas is, not a traceback ending in
ModuleNotFoundError: SystemExit's message is all a script prints (a notebook shows it as one line).
"""

try:
    import pandas  # noqa: F401 - frames imports it; asked here first to say what to do without it
except ModuleNotFoundError as missing:
    if missing.name != "pandas":
        raise
    raise SystemExit(
        "ifaudit.analysis needs pandas, which this Python's environment lacks (make run's, .venv-runtime, "
        "holds none): run it with .venv/bin/python (make .venv/.installed), or pip install 'ifaudit[analysis]'"
    ) from None

from ifaudit.analysis.frames import Results, load  # noqa: E402 - after the check above

__all__ = ["Results", "load"]
