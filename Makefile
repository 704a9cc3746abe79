# Two entry points: `make run` (the main job) and `make test`. Both build .venv from the
# hash-locked requirements first, so a fresh machine needs only Python 3.11 and the registries.
VENV  := .venv
STAMP := $(VENV)/.installed

.PHONY: run test

$(STAMP): requirements.lock pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $@

# Every rule calls the `ifaudit` command, so the venv's bin goes first on PATH. The second
# call renders Snakemake's HTML report of what the first one made.
run: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/snakemake --cores all $(ARGS)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/snakemake --cores all $(ARGS) --report results/report.html

test: $(STAMP)
	$(VENV)/bin/python -m pytest
