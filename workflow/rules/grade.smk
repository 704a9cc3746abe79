rule judge:
    input:
        prompts=run_prompts,
        responses=run_responses,
    output:
        plan.run_file("{run}", "judge.json"),
    log:
        "logs/{run}/judge.log",
    params:
        job=lambda wildcards: PLAN.judge_job(wildcards.run),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"


rule grade_shard:
    input:
        unpack(grade_inputs),
    output:
        grades=temp(plan.shard_grades("{run}", "{pass_}", "{shard}", "{shards}")),
        # The canary's verdict in this very process, before it grades (canary.smk combines them).
        # Kept, unlike the shard's grades: adding a run of the task combines them again.
        canary=plan.process_record("{run}", "{pass_}", "canary", "{shard}", "{shards}"),
        # The prompt set's audit with this process's registry (report.smk combines them).
        audit=plan.process_record("{run}", "{pass_}", "prompts", "{shard}", "{shards}"),
    log:
        "logs/{run}/grade-{pass_}-{shard}-of-{shards}.log",
    # Runs of batches are the batch jobs' (batch.smk).
    wildcard_constraints:
        run=UNBATCHED_RUN,
    # Both passes first, side by side: they are the longest jobs and everything waits for them.
    priority: 10
    threads: 1
    params:
        hash_seed=lambda wildcards: plan.PASS_HASH_SEEDS[wildcards.pass_],
        job=lambda wildcards: PLAN.grade_job(wildcards.run, wildcards.pass_, wildcards.shard, wildcards.shards),
    shell:
        "PYTHONHASHSEED={params.hash_seed} ifaudit {params.job:q} > {log} 2>&1"


# Merges each pass's shards and keeps the grades only if the two passes are byte-identical; and
# combines the canary verdicts of the run's grading processes into the run's own (canary.smk).
rule verify:
    input:
        first=pass_shards("a"),
        second=pass_shards("b"),
        canaries=run_canary_verdicts,
    output:
        first=plan.pass_grades("{run}", "a"),
        second=plan.pass_grades("{run}", "b"),
        grades=plan.run_file("{run}", "grades.jsonl"),
        record=plan.run_file("{run}", "verify.json"),
        canary=plan.run_file("{run}", "canary.json"),
    log:
        "logs/{run}/verify.log",
    # Runs of batches are the batch jobs' (batch.smk).
    wildcard_constraints:
        run=UNBATCHED_RUN,
    # Verify and stats lead to the report: ahead of the small jobs beside them (priority 0).
    priority: 1
    params:
        # The shard count from the inputs: a params function that asked the checkpoint again
        # would make Snakemake replace the job (and, on Slurm, lose it from its group).
        job=lambda wildcards, input: PLAN.verify_job(wildcards.run, len(input.first)),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"
