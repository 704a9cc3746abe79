"""Every job of a run plan as the options of its `ifaudit` step, decided once from the validated
config: the workflow's rules pass these lists as params (`{params.x:q}`), and the bundle verifier
replays them from the config the DAG recorded (results/MANIFEST.json), with the bundle's own
places for the grader, the NLTK data and the stores. Paths come from ifaudit.steps.planning.plan.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ifaudit.core.errors import ConfigError
from ifaudit.inputs.importers import FILE_SETTINGS
from ifaudit.io.remote.sources import dataset_specs
from ifaudit.judging.options import judge_options
from ifaudit.steps.planning import plan
from ifaudit.tasks.canary_files import canary_dataset_names

# What a run's manifest records of the config beyond the run itself.
RECORDED_SETTINGS = ("grader", "grader_sources", "offline", "mirror", "nltk_mirror", "shards")


@dataclass(frozen=True)
class RunPlan:
    """A validated config (defaults filled in) and the pins its jobs name."""

    config: Mapping[str, Any]
    pin: Path  # Google's grader's pin
    infobench_pin: Path  # InFoBench's evaluation.py, by version

    @property
    def runs(self) -> Mapping[str, Mapping[str, Any]]:
        return self.config["runs"]

    @property
    def datasets(self) -> Mapping[str, Mapping[str, Any]]:
        return self.config["datasets"]

    @property
    def judgement_store(self) -> str:
        return self.config.get("judgement_store", plan.DEFAULT_JUDGEMENT_STORE)

    @property
    def generation_store(self) -> str:
        return self.config.get("generation_store", plan.DEFAULT_GENERATION_STORE)

    def task(self, run: str) -> str:
        return self.runs[run]["task"]

    # --- where a run's inputs come from ----------------------------------------------------------

    def prompts(self, run: str) -> str:
        return plan.dataset_file(self.runs[run]["prompts"])

    def responses(self, run: str) -> str:
        """A run's response file: its dataset, what `generate` made from the run's model, or what
        `import-log` made of a harness's log."""
        spec = self.runs[run]
        if "model" in spec:
            return plan.run_file(run, "responses.jsonl")
        if "import" in spec:
            return plan.run_file(run, "imported/responses.jsonl")
        return plan.dataset_file(spec["responses"])

    def published_verdicts(self, run: str) -> list[str]:
        """The file of the committed verdicts the run's published figures were computed from, if
        its config names them (`published.strict_verdicts`): the summary counts them."""
        name = (self.runs[run].get("published") or {}).get("strict_verdicts")
        return [plan.dataset_file(name)] if name else []

    def canary_datasets(self, run: str) -> list[str]:
        """The files of the datasets the canary of the run's task reads (none for an inline canary)."""
        return [plan.dataset_file(name) for name in canary_dataset_names(self.task(run))]

    def run_datasets(self, run: str) -> list[str]:
        """Every dataset the run reads, by name, sorted: what its manifest checks."""
        return self._run_datasets[run]

    @cached_property
    def _run_datasets(self) -> dict[str, list[str]]:
        """Per run, computed once: the workflow asks for each job of every run."""
        return {run: self._datasets_of(run) for run in self.runs}

    def _datasets_of(self, run: str) -> list[str]:
        spec = self.runs[run]
        recorded = [spec[role] for role in ("responses", "judgements") if role in spec]
        imported = [spec["import"][name] for name in FILE_SETTINGS if name in spec.get("import", {})]
        verdicts = [name] if (name := (spec.get("published") or {}).get("strict_verdicts")) else []
        return sorted({spec["prompts"], *recorded, *imported, *verdicts, *canary_dataset_names(spec["task"])})

    # --- the options of each step ----------------------------------------------------------------

    def task_pin(self, task: str) -> Path:
        """The pin of the task's upstream grader: Google's (the plan's), or the task's own, found
        in the same project as Google's (a checkout, or a bundle's project/)."""
        pin_file = plan.task_pin_file(task)
        if pin_file == plan.GRADER_PIN:
            return self.pin
        return self.pin.parents[len(Path(plan.GRADER_PIN).parts) - 1] / pin_file

    def grader(self, task: str) -> list[str]:
        """The options that choose and locate the task's grader, the same for every grading job of it."""
        args = ["--grader", self.config["grader"], "--pin", str(self.task_pin(task))]
        for source in self.config["grader_sources"]:
            args += ["--from", str(source)]
        if self.config["offline"]:
            args.append("--offline")
        if self.config["nltk_mirror"]:
            args += ["--nltk-mirror", str(self.config["nltk_mirror"])]
        return args

    def fetch(self, dataset: str) -> list[str]:
        """The dataset's sources in the order `ifaudit fetch` tries them, and its pinned sha256."""
        spec = self.datasets[dataset]
        specs = dataset_specs(spec, self.config["mirror"], self.config["offline"])
        args = [part for source in specs for part in ("--from", source)]
        return args + (["--sha256", spec["sha256"]] if "sha256" in spec else [])

    def generation(self, run: str) -> list[str]:
        model = json.dumps(self.runs[run]["model"], sort_keys=True)
        return ["--store", self.generation_store, "--model-json", model]

    def replay_only(self) -> list[str]:
        """`--replay-only` when the config sets `replay_only`. The workflow passes it beside the
        generate job's command line, not in it (generate.smk): Snakemake reruns a job whose params
        changed, and replaying instead of asking changes no byte of what generate writes (a
        request the store lacks fails instead), so toggling it must rerun nothing."""
        return ["--replay-only"] if self.config.get("replay_only") else []

    def import_settings(self, run: str) -> list[str]:
        """The log's format and the run's import settings as the importer reads them (dataset
        names become their files)."""
        options = dict(self.runs[run]["import"])
        log_format = options.pop("format")
        for name in FILE_SETTINGS:
            if name in options:
                options[name] = plan.dataset_file(options[name])
        return ["--format", log_format, "--options-json", json.dumps(options, sort_keys=True)]

    def canary(self, run: str) -> list[str]:
        """A grading job's canary options: the canary's datasets and the configured replacement
        of the committed canary."""
        args = []
        if datasets := self.canary_datasets(run):
            args += ["--canary-prompts", datasets[0], "--canary-responses", datasets[1]]
        if (task := self.task(run)) in self.config.get("canary", {}):
            args += ["--canary", str(self.config["canary"][task])]
        return args

    def judge_protocol(self, run: str) -> dict[str, str]:
        """How a run's judge is asked: the protocol, and for the reference one, which pinned commit
        of InFoBench's evaluation.py (the pin's default unless the run names one)."""
        judge = self.runs[run]["judge"]
        protocol = judge.get("protocol", "reference")
        if protocol != "reference":
            return {"protocol": protocol}
        pin = self._infobench_versions
        version = judge.get("infobench_version", pin["default"])
        if version not in pin["versions"]:
            raise ConfigError(
                f"runs.{run}.judge.infobench_version",
                f"{version!r} is not pinned in {self.infobench_pin}; known: {', '.join(sorted(pin['versions']))}",
            )
        return {
            "protocol": protocol,
            "infobench_version": version,
            "infobench_commit": pin["versions"][version]["commit"],
        }

    @cached_property
    def _infobench_versions(self) -> dict[str, Any]:
        return tomllib.loads(self.infobench_pin.read_text(encoding="utf-8"))

    def judge(self, run: str) -> list[str]:
        chosen = self.judge_protocol(run)
        args = ["--store", self.judgement_store, *judge_options(self.runs[run]["judge"], chosen)]
        if "infobench_version" in chosen:
            args += ["--infobench-pin", str(self.infobench_pin)]
        for source in self.config.get("infobench_sources", ()):
            args += ["--infobench-from", str(source)]
        return args + (["--offline"] if self.config["offline"] else [])

    def judging_inputs(self, run: str) -> list[str]:
        """What a judged run's grading replays: the imported verdicts, or the judge step's record."""
        spec = self.runs[run]
        if "judgements" in spec:
            return [plan.dataset_file(spec["judgements"])]
        return [plan.run_file(run, "judge.json")] if "judge" in spec else []

    def judging(self, run: str) -> list[str]:
        """A judged run's grading options: its recorded verdicts, or the judge's store and settings."""
        spec = self.runs[run]
        if "judgements" in spec:
            return ["--judgements", plan.dataset_file(spec["judgements"])]
        return self.judge(run) if "judge" in spec else []

    def statistics(self) -> list[str]:
        settings = self.config["statistics"]
        return [
            "--resamples",
            str(settings["resamples"]),
            "--level",
            repr(settings["level"]),
            "--interval",
            settings["interval"],
            "--seed",
            str(settings["seed"]),
        ]

    def manifest_config(self, run: str) -> str:
        """What the run's manifest records of the config, as JSON."""
        settings = {
            **{key: self.config[key] for key in RECORDED_SETTINGS},
            "judgement_store": self.judgement_store,
            "generation_store": self.generation_store,
        }
        datasets = {name: self.datasets[name] for name in self.run_datasets(run)}
        described: dict[str, Any] = {"run": self.runs[run], "settings": settings, "datasets": datasets}
        if "judge" in self.runs[run]:
            described["judge_protocol"] = self.judge_protocol(run)
        return json.dumps(described, sort_keys=True)

    def manifest_job(self, run: str) -> list[str]:
        """The run's manifest: the config it ran with, its datasets' fetch records, and the files
        it hashes (the generate step's side record too, for a generated run)."""
        files = {
            "summary": plan.run_file(run, "summary.json"),
            "grades": plan.run_file(run, "grades.jsonl"),
            "verify": plan.run_file(run, "verify.json"),
            "pass_a": plan.pass_grades(run, "a"),
            "pass_b": plan.pass_grades(run, "b"),
            "canary": plan.run_file(run, "canary.json"),
            "environment": plan.environment_record(self.task(run)),
        }
        if "model" in self.runs[run]:
            files["generation"] = plan.run_file(run, "generation.json")
        datasets = [f"--dataset={name}={plan.dataset_record(name)}" for name in self.run_datasets(run)]
        head = ["manifest", "--run", run, "--config-json", self.manifest_config(run), *datasets]
        return [
            *head,
            *(f"--file={label}={path}" for label, path in files.items()),
            "--out",
            plan.run_file(run, "MANIFEST.json"),
        ]

    # --- across runs -------------------------------------------------------------------------------

    def comparisons(self) -> list[tuple[str, str]]:
        """The pairs (A, B) compared, A minus B (ifaudit.steps.planning.plan.comparison_pairs)."""
        return plan.comparison_pairs(self.runs, self.config["comparisons"])

    def comparison_jobs(self) -> list[dict[str, Any]]:
        """One compare job per task and prompt set (ifaudit.steps.planning.plan.comparison_jobs)."""
        return plan.comparison_jobs(self.runs, self.comparisons())

    def prompt_sets(self) -> list[str]:
        """Prompt sets to audit for substituted settings: those graded by checkers."""
        judged = plan.judged_tasks()
        return sorted({spec["prompts"] for spec in self.runs.values() if spec["task"] not in judged})

    def report_plan(self) -> dict[str, Any]:
        return plan.report_plan(self.runs, self.comparisons(), self.prompt_sets())

    # --- each job's whole command line (after `ifaudit`), as the DAG runs it and a verifier replays it

    def vendor_job(self, task: str) -> list[str]:
        return ["vendor", "--task", task, *self.grader(task), "--record", plan.environment_record(task)]

    def fetch_job(self, dataset: str) -> list[str]:
        out, record = plan.dataset_file(dataset), plan.dataset_record(dataset)
        return ["fetch", "--name", dataset, *self.fetch(dataset), "--out", out, "--record", record]

    def generate_job(self, run: str, quiet: bool = False, replay_only: bool = True) -> list[str]:
        """The generate job; without `replay_only`, the job less the config's `--replay-only`
        (the workflow's params: see replay_only)."""
        outputs = ["--out", plan.run_file(run, "responses.jsonl"), "--record", plan.run_file(run, "generation.json")]
        head = ["generate", "--task", self.task(run), "--prompts", self.prompts(run), *self.generation(run)]
        replay = self.replay_only() if replay_only else []
        return [*head, *replay, *(["--quiet"] if quiet else []), *outputs]

    def judge_job(self, run: str) -> list[str]:
        inputs = ["--prompts", self.prompts(run), "--responses", self.responses(run)]
        return [
            "judge",
            "--task",
            self.task(run),
            *inputs,
            *self.judge(run),
            "--record",
            plan.run_file(run, "judge.json"),
        ]

    def import_job(self, run: str) -> list[str]:
        log = plan.dataset_file(self.runs[run]["responses"])
        outputs = ["--out", self.responses(run), "--harness", plan.run_file(run, "imported/harness.json")]
        head = ["import-log", *self.import_settings(run), "--log", log, "--task", self.task(run)]
        return [*head, "--prompts", self.prompts(run), *outputs]

    def grade_job(self, run: str, pass_: str, shard: int | str, shards: int | str, certify: bool = True) -> list[str]:
        """One grading process: with `certify` (the DAG's), it first runs the canary and audits the
        prompt set, writing both beside its shard; a verifier's regrade does neither, quietly."""
        inputs = ["--prompts", self.prompts(run), "--responses", self.responses(run)]
        args = [
            "grade",
            "--task",
            self.task(run),
            *inputs,
            "--shard",
            f"{shard}/{shards}",
            *self.grader(self.task(run)),
        ]
        args += self.judging(run)
        if certify:
            args += ["--canary-out", plan.process_record(run, pass_, "canary", shard, shards), *self.canary(run)]
            args += ["--audit-out", plan.process_record(run, pass_, "prompts", shard, shards)]
        else:
            args.append("--quiet")
        return [*args, "--out", plan.shard_grades(run, pass_, shard, shards)]

    def verify_job(self, run: str, shards: int, certified: bool = True) -> list[str]:
        """The run's passes merged and compared; with `certified` (the DAG's), the canary verdicts
        of its grading processes combined into the run's own too (one job, not two, per run)."""
        first, second = ([plan.shard_grades(run, pass_, i, shards) for i in range(shards)] for pass_ in "ab")
        outputs = ["--first-out", plan.pass_grades(run, "a"), "--second-out", plan.pass_grades(run, "b")]
        outputs += ["--out", plan.run_file(run, "grades.jsonl"), "--record", plan.run_file(run, "verify.json")]
        if certified:
            canaries = plan.process_records("canary", {run: shards})
            outputs += ["--canaries", *canaries, "--canary-out", plan.run_file(run, "canary.json")]
        return ["verify", "--first", *first, "--second", *second, *outputs]

    def summarize_job(self, run: str) -> list[str]:
        label = self.runs[run].get("label", run)
        inputs = ["--grades", plan.run_file(run, "grades.jsonl"), "--prompts", self.prompts(run)]
        inputs += ["--responses", self.responses(run), "--canary", plan.run_file(run, "canary.json")]
        inputs += [part for path in self.published_verdicts(run) for part in ("--published-verdicts", path)]
        head = ["summarize", "--run", run, "--task", self.task(run), "--label", label]
        return [*head, *inputs, "--out", plan.run_file(run, "summary.json")]

    def stats_job(self, run: str) -> list[str]:
        inputs = ["--grades", plan.run_file(run, "grades.jsonl"), "--prompts", self.prompts(run)]
        return [
            "stats",
            "--task",
            self.task(run),
            *inputs,
            *self.statistics(),
            "--out",
            plan.run_file(run, "stats.json"),
        ]

    def compare_many_job(self, job: Mapping[str, Any]) -> list[str]:
        """A comparison job of `comparison_jobs`: its runs' grades and prompts, its pairs (or
        `--all-pairs` when they are every pair of its runs: the command line stays linear)."""
        runs = job["runs"]
        inputs = ["--grades", *(plan.run_file(run, "grades.jsonl") for run in runs)]
        inputs += ["--prompts", *(self.prompts(run) for run in runs)]
        pairs = ["--all-pairs"] if job["all_pairs"] else [part for pair in job["pairs"] for part in ("--pair", *pair)]
        head = ["compare-many", "--task", job["task"], "--runs", *runs, *inputs, *pairs]
        return [*head, *self.statistics(), "--out-dir", plan.COMPARISONS]

    # --- batches: the same command lines, many runs to a process (ifaudit.steps.grading.batch) ---

    @cached_property
    def batch_size(self) -> int:
        """Runs per batch job: the config's `batch_runs`, `auto` chosen from the number of runs
        (plan.auto_batch_size; 1 with `shards` other than 1, which a batch does not split)."""
        setting = self.config.get("batch_runs", "auto")
        if setting != "auto":
            return int(setting)
        return plan.auto_batch_size(len(self.runs)) if self.config["shards"] == 1 else 1

    @cached_property
    def batches(self) -> list[dict[str, Any]]:
        """The batches (plan.batches), or none when a job takes one run."""
        return plan.batches(self.runs, self.batch_size) if self.batch_size > 1 else []

    @cached_property
    def batched_runs(self) -> frozenset[str]:
        return frozenset(run for batch in self.batches for run in batch["runs"])

    def grade_batch_outputs(self, run: str, pass_: str) -> list[str]:
        """What a run's grading process of `pass_` writes: its grades (one shard), its canary
        verdict and its prompt audit."""
        records = [plan.process_record(run, pass_, kind, 0, 1) for kind in ("canary", "prompts")]
        return [plan.shard_grades(run, pass_, 0, 1), *records]

    def finish_outputs(self, run: str) -> list[str]:
        """What a run's verify, stats, summarize and manifest steps write."""
        names = ("grades.jsonl", "verify.json", "canary.json", "stats.json", "summary.json", "MANIFEST.json")
        return [
            *(plan.pass_grades(run, pass_) for pass_ in plan.PASS_HASH_SEEDS),
            *(plan.run_file(run, n) for n in names),
        ]

    def grade_batch(self, batch: Mapping[str, Any], pass_: str) -> dict[str, Any]:
        """A batch's grading process of `pass_`: each run's `grade_job` of one shard."""
        runs = [
            {"run": run, "steps": [self.grade_job(run, pass_, 0, 1)], "outputs": self.grade_batch_outputs(run, pass_)}
            for run in batch["runs"]
        ]
        return {"batch": batch["name"], "step": f"grade-{pass_}", "runs": runs}

    def finish_batch(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """A batch's verify, stats, summarize and manifest steps, run after run."""
        runs = [
            {
                "run": run,
                "steps": [
                    self.verify_job(run, 1),
                    self.stats_job(run),
                    self.summarize_job(run),
                    self.manifest_job(run),
                ],
                "outputs": self.finish_outputs(run),
                "made_before": [
                    path for pass_ in plan.PASS_HASH_SEEDS for path in self.grade_batch_outputs(run, pass_)
                ],
            }
            for run in batch["runs"]
        ]
        return {"batch": batch["name"], "step": "finish", "runs": runs}

    def batch_job(self, staged: tuple[Path, str], after: Sequence[str], record: str) -> list[str]:
        """`ifaudit batch` of a staged batch (`grade_batch`, `finish_batch`): after the records
        `after` of the batch's earlier jobs, its record in `record`."""
        path, sha256 = staged
        head = ["batch", "--steps", str(path), "--steps-sha256", sha256]
        return [*head, *(part for prior in after for part in ("--after", prior)), "--record", record]

    def audit_claims_job(self, run: str) -> list[str]:
        inputs = ["--prompts", self.prompts(run), "--responses", self.responses(run)]
        inputs += [
            "--grades",
            plan.run_file(run, "grades.jsonl"),
            "--harness",
            plan.run_file(run, "imported/harness.json"),
        ]
        outputs = ["--out", plan.run_file(run, "claims.json"), "--table", plan.run_file(run, "disagreements.csv")]
        task = self.task(run)
        return ["audit-claims", "--task", task, *inputs, *self.grader(task), *self.statistics(), *outputs]

    def auditing_runs(self, dataset: str) -> list[str]:
        """The runs whose grading processes audit a prompt set: those of the task of the first run
        grading it by checkers (a prompt set is audited with that task's registry)."""
        judged = plan.judged_tasks()
        task = next(
            spec["task"] for spec in self.runs.values() if spec["prompts"] == dataset and spec["task"] not in judged
        )
        return [run for run, spec in self.runs.items() if spec["prompts"] == dataset and spec["task"] == task]

    def audit_prompts_job(self, dataset: str) -> list[str]:
        """A prompt set's audit alone, with the registry the DAG's grading processes audited it with
        (the DAG's is combined from their audits, which must agree with it)."""
        run = self.auditing_runs(dataset)[0]
        head = ["audit-prompts", "--task", self.task(run), "--prompts", plan.dataset_file(dataset)]
        return [*head, *self.grader(self.task(run)), "--out", plan.prompt_audit(dataset)]

    def report_job(self, plan_file: str | Path, sha256: str) -> list[str]:
        """The report of a plan staged in a file (`report_plan`'s, or a bundle's recorded one):
        at a hundred runs its JSON outgrows a command line."""
        return ["report", "--plan", str(plan_file), "--plan-sha256", sha256, "--out-dir", plan.RESULTS]
