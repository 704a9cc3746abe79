rule grader:
    output:
        "resources/grader.json",
    log:
        "logs/grader.log",
    params:
        grader=grader_args(),
    shell:
        "ifaudit vendor {params.grader} --record {output} > {log} 2>&1"
