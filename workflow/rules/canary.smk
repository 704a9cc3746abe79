# Every grading process runs the task's canary before it grades (grade.smk); this is the task's
# verdict, combined from all of them: any process that failed fails it.
rule canary:
    input:
        canary_verdicts,
    output:
        "results/canary/{task}.json",
    log:
        "logs/canary/{task}.log",
    shell:
        "ifaudit combine-canaries {input} --out {output} > {log} 2>&1"
