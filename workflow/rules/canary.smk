rule canary:
    input:
        unpack(canary_inputs),
    output:
        "results/canary/{task}.json",
    log:
        "logs/canary/{task}.log",
    # Next after the grading passes: every summary waits for it.
    priority: 5
    params:
        grader=grader_args(),
        canary=canary_override,
        data=canary_data_args,
    shell:
        "ifaudit canary --task {wildcards.task} {params.canary} {params.data} {params.grader} "
        "--out {output} > {log} 2>&1"
