# A run that names a `model` gets its responses from the endpoint, every request recorded in the
# generation store; a network step, so it runs where the submit host can reach the endpoint.
localrules:
    generate,


rule generate:
    input:
        prompts=run_prompts,
    output:
        responses=plan.run_file("{run}", "responses.jsonl"),
        record=plan.run_file("{run}", "generation.json"),
    log:
        "logs/{run}/generate.log",
    # `--replay-only` (the config's replay_only) changes no byte of the outputs, so it is not
    # recorded as a param: a changed param would rerun the job and everything after it
    # (jobs.replay_only, ifaudit.io.snakemake_internals.Unrecorded).
    params:
        job=lambda wildcards: PLAN.generate_job(wildcards.run, replay_only=False),
        replay_only=internals.Unrecorded(PLAN.replay_only()),
    shell:
        "ifaudit {params.job:q} {params.replay_only} > {log} 2>&1"
