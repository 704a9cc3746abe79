# Past a few dozen runs (`batch_runs`, docs/scale.md), a task's runs are graded, verified and
# summarized a batch at a time: one job per grading pass, and one for each run's verify, stats,
# summary and manifest, each running the one-run jobs' own command lines in one process
# (ifaudit.steps.grading.batch); every run's files are the bytes the one-run jobs write. A run that
# fails fails alone: its batch-mates' results stand, and `check_batches` removes what it left and
# fails the DAG naming it (before the steps that read every run).
for batch in PLAN.batches:
    for pass_ in plan.PASS_HASH_SEEDS:

        rule:
            name:
                f"grade_{batch['name']}_{pass_}"
            input:
                batch_inputs(batch),
            output:
                grades=temp([plan.shard_grades(run, pass_, 0, 1) for run in batch["runs"]]),
                records=process_records_of(batch["runs"], pass_),
                record=plan.batch_record(batch["name"], f"grade-{pass_}"),
            log:
                plan.batch_log(batch["name"], f"grade-{pass_}"),
            # Both passes first, side by side, as the one-run grading jobs.
            priority: 10
            threads: 1
            resources:
                mem_mb=3000,
                runtime=10 + len(batch["runs"]),
            params:
                hash_seed=plan.PASS_HASH_SEEDS[pass_],
                job=batch_job(batch, f"grade-{pass_}", PLAN.grade_batch(batch, pass_), []),
            shell:
                "PYTHONHASHSEED={params.hash_seed} ifaudit {params.job:q} > {log} 2>&1"

    rule:
        name:
            f"finish_{batch['name']}"
        input:
            batch_inputs(batch),
            # The grading processes' canary verdicts, read too, are not listed: the jobs whose
            # records are listed made them, and Snakemake records every input once per output.
            grades=[plan.shard_grades(run, pass_, 0, 1) for run in batch["runs"] for pass_ in plan.PASS_HASH_SEEDS],
            after=[plan.batch_record(batch["name"], f"grade-{pass_}") for pass_ in plan.PASS_HASH_SEEDS],
        output:
            [path for run in batch["runs"] for path in PLAN.finish_outputs(run)],
            record=plan.batch_record(batch["name"], "finish"),
        log:
            plan.batch_log(batch["name"], "finish"),
        priority: 1
        resources:
            mem_mb=2000,
            runtime=10 + len(batch["runs"]),
        params:
            job=batch_job(
                batch,
                "finish",
                PLAN.finish_batch(batch),
                [plan.batch_record(batch["name"], f"grade-{pass_}") for pass_ in plan.PASS_HASH_SEEDS],
            ),
        shell:
            "ifaudit {params.job:q} > {log} 2>&1"


# Every batch done, and no run of one failed: what the steps reading every run wait for.
if PLAN.batches:

    localrules:
        check_batches,

    rule check_batches:
        input:
            [plan.batch_record(batch["name"], "finish") for batch in PLAN.batches],
        output:
            plan.BATCHES_CHECKED,
        log:
            "logs/batches/check.log",
        shell:
            "ifaudit check-batches {input} --out {output} > {log} 2>&1"
