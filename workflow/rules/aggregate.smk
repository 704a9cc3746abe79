rule summarize:
    input:
        grades=plan.run_file("{run}", "grades.jsonl"),
        prompts=run_prompts,
        responses=run_responses,
        canary=run_canary,
    output:
        plan.run_file("{run}", "summary.json"),
    log:
        "logs/{run}/summarize.log",
    params:
        label=lambda wildcards: shlex.quote(RUNS[wildcards.run].get("label", wildcards.run)),
        task=run_task,
    shell:
        "ifaudit summarize --run {wildcards.run} --task {params.task} --label {params.label} --grades {input.grades} "
        "--prompts {input.prompts} --responses {input.responses} --canary {input.canary} --out {output} > {log} 2>&1"


rule manifest:
    input:
        summary=plan.run_file("{run}", "summary.json"),
        grades=plan.run_file("{run}", "grades.jsonl"),
        verify=plan.run_file("{run}", "verify.json"),
        passes=[plan.pass_grades("{run}", pass_) for pass_ in plan.PASS_HASH_SEEDS],
        canary=run_canary,
        environment=run_environment,
        prompts=run_prompts,
        responses=run_responses,
        generated=generation_record,
    output:
        plan.run_file("{run}", "MANIFEST.json"),
    log:
        "logs/{run}/manifest.log",
    params:
        config=manifest_config,
        datasets=manifest_datasets,
        generated=lambda wildcards, input: quoted(*(f"--file=generation={path}" for path in input.generated)),
    shell:
        "ifaudit manifest --run {wildcards.run} --config-json {params.config} {params.datasets} "
        "--file summary={input.summary} --file grades={input.grades} --file verify={input.verify} "
        "--file pass_a={input.passes[0]} --file pass_b={input.passes[1]} --file canary={input.canary} "
        "--file environment={input.environment} {params.generated} --out {output} > {log} 2>&1"
