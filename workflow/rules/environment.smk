rule environment:
    output:
        "resources/environment/{task}.json",
    log:
        "logs/environment/{task}.log",
    params:
        grader=grader_args(),
    shell:
        "ifaudit vendor --task {wildcards.task} {params.grader} --record {output} > {log} 2>&1"
