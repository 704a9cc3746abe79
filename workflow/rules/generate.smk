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
    params:
        job=lambda wildcards: PLAN.generate_job(wildcards.run),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"
