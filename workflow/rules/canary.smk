rule canary:
    input:
        unpack(canary_inputs),
        environment="resources/grader.json",
    output:
        "results/canary/{task}.json",
    log:
        "logs/canary/{task}.log",
    params:
        grader=grader_args(),
        canary=canary_override,
    shell:
        "ifaudit canary --task {wildcards.task} {params.canary} --prompts {input.prompts} "
        "--responses {input.responses} {params.grader} --out {output} > {log} 2>&1"
