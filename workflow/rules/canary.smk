# Every grading process runs the task's canary before it grades (grade.smk). A run's verdict
# combines its own processes' verdicts, in the run's `verify` job: its summary and manifest hang
# on it, so a run's results never wait for, or fall with, another run's grading.
#
# The task's verdict, for the report: combined from every grading process of every run of the
# task; any process that failed fails it.
rule canary:
    input:
        verdicts=canary_verdicts,
        checked=BATCHES_CHECKED,
    output:
        plan.task_canary("{task}"),
    log:
        "logs/canary/{task}.log",
    shell:
        "ifaudit combine-canaries {input.verdicts} --out {output} > {log} 2>&1"
