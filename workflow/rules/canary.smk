# Every grading process runs the task's canary before it grades (grade.smk). A run's verdict
# combines its own processes' verdicts: its summary and manifest hang on it, so a run's results
# never wait for, or fall with, another run's grading.
rule run_canary:
    input:
        run_canary_verdicts,
    output:
        plan.run_file("{run}", "canary.json"),
    log:
        "logs/{run}/canary.log",
    shell:
        "ifaudit combine-canaries {input} --out {output} > {log} 2>&1"


# The task's verdict, for the report: combined from every grading process of every run of the
# task; any process that failed fails it.
rule canary:
    input:
        canary_verdicts,
    output:
        plan.task_canary("{task}"),
    log:
        "logs/canary/{task}.log",
    shell:
        "ifaudit combine-canaries {input} --out {output} > {log} 2>&1"
