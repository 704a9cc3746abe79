"""The analysis layer: a finished audit's results/ folder as pandas DataFrames, for notebooks and
papers (`pip install 'ifaudit[analysis]'`). Nothing in the pipeline imports it: the runtime
environment has no pandas."""

from ifaudit.analysis.frames import Results, load

__all__ = ["Results", "load"]
