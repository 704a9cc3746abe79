rule summarize:
    input:
        unpack(summary_inputs),
        grades=plan.run_file("{run}", "grades.jsonl"),
    output:
        plan.run_file("{run}", "summary.json"),
    log:
        "logs/{run}/summarize.log",
    # Runs of batches are the batch jobs' (batch.smk).
    wildcard_constraints:
        run=UNBATCHED_RUN,
    params:
        job=lambda wildcards: PLAN.summarize_job(wildcards.run),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"


rule manifest:
    input:
        unpack(manifest_inputs),
        summary=plan.run_file("{run}", "summary.json"),
        grades=plan.run_file("{run}", "grades.jsonl"),
        verify=plan.run_file("{run}", "verify.json"),
        passes=[plan.pass_grades("{run}", pass_) for pass_ in plan.PASS_HASH_SEEDS],
    output:
        plan.run_file("{run}", "MANIFEST.json"),
    log:
        "logs/{run}/manifest.log",
    # Runs of batches are the batch jobs' (batch.smk).
    wildcard_constraints:
        run=UNBATCHED_RUN,
    params:
        job=lambda wildcards: PLAN.manifest_job(wildcards.run),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"
