rule environment:
    output:
        plan.environment_record("{task}"),
    log:
        "logs/environment/{task}.log",
    params:
        grader=grader_args(),
    shell:
        "ifaudit vendor --task {wildcards.task} {params.grader} --record {output} > {log} 2>&1"
