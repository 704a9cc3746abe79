# ifaudit: pin, fetch, canary, grade twice, verify, aggregate. See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


# Every job runs in this image under `--sdm apptainer`; without that flag it is ignored.
container: config["container"]


include: "workflow/rules/common.smk"
include: "workflow/rules/environment.smk"
include: "workflow/rules/fetch.smk"
include: "workflow/rules/generate.smk"
include: "workflow/rules/canary.smk"
include: "workflow/rules/import.smk"
include: "workflow/rules/grade.smk"
include: "workflow/rules/batch.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/failures.smk"
include: "workflow/rules/record.smk"


# The job rate limit's re-look timers only while the limit holds jobs back (docs/snakemake.md); the
# garbage collector, off while the DAG was planned, is on again for the run (common.smk).
onstart:
    internals.relook_only_at_the_rate_limit(workflow)
    gc.enable()


# Each failed job's reason in Snakemake's output, and no stale result downstream of it.
onerror:
    on_failure()
    left_unfinished()
    record_content()
    internals.cancel_rescheduling_timers()


# A run that does not count (its canary failed) is named last, and the DAG exits non-zero; else
# `make run`'s HTML report is rendered here (common.smk).
onsuccess:
    internals.cancel_rescheduling_timers()
    record_content()
    on_success()
    render_html_report()
    say_counted()


rule all:
    default_target: True
    input:
        final_outputs(),
        rules.report.output,  # all of it: a file of the report gone (or new in this version) makes it again
        plan.report_file("MANIFEST.json"),  # the configs the DAG ran with (record.smk), for `ifaudit bundle`
