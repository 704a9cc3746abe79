# Runs whose responses come from a harness's log (`import:`): the log is turned into a response
# file and a record of the harness's own verdicts, graded like any run, then audited against
# the harness's claims.


rule import_log:
    input:
        unpack(import_inputs),
        prompts=run_prompts,
    output:
        responses=plan.run_file("{run}", "imported/responses.jsonl"),
        harness=plan.run_file("{run}", "imported/harness.json"),
    log:
        "logs/{run}/import.log",
    params:
        job=lambda wildcards: PLAN.import_job(wildcards.run),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"


rule audit_claims:
    input:
        prompts=run_prompts,
        responses=plan.run_file("{run}", "imported/responses.jsonl"),
        harness=plan.run_file("{run}", "imported/harness.json"),
        grades=plan.run_file("{run}", "grades.jsonl"),
        environment=run_environment,
        checked=BATCHES_CHECKED,
    output:
        claims=plan.run_file("{run}", "claims.json"),
        table=report(
            plan.run_file("{run}", "disagreements.csv"),
            caption="../report/disagreements.rst",
            category="4. Claimed vs audited",
        ),
    log:
        "logs/{run}/audit-claims.log",
    params:
        job=lambda wildcards: PLAN.audit_claims_job(wildcards.run),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"
