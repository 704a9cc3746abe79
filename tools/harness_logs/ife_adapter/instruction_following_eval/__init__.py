"""Adapter for inspect_evals' IFEval scorer, which imports `instruction_following_eval.evaluation`
(a packaging of Google's grader that is not on PyPI). The package's other modules are Google's
pinned files, found through IFEVAL_UPSTREAM (the folder holding them, e.g.
../shared/upstream/google_ifeval/instruction_following_eval); only `evaluation` is ours."""

import os

__path__.append(os.environ["IFEVAL_UPSTREAM"])  # noqa: F821 - a package's own __path__
