# The workflow's own record, results/MANIFEST.json: the config files it ran with, in the order
# Snakemake merged their values (the Snakefile's `configfile:` first, then each --configfile; a
# file given twice counts where it was last merged), each with its sha256 and what loaded it; the
# --config values; the merged config; and its runs in order. (Snakemake starts the config from the
# --configfile files, so their runs come before the Snakefile's own: a rerun gives the same files
# the same way.) `ifaudit bundle` reads it, so the configs are never repeated by
# hand. Written after every final output, and again whenever the record changes. Deterministic:
# paths relative to the project, else to the working folder; no time stamps.


localrules:
    workflow_manifest,


rule workflow_manifest:
    input:
        final_outputs(),
    output:
        plan.report_file("MANIFEST.json"),
    log:
        "logs/workflow_manifest.log",
    params:
        staged=staged_bytes(plan.STAGED, "workflow-record", workflow_record().encode()),
    # Copied only if its bytes still have the sha256 its name says (staged files are never trusted).
    shell:
        "echo '{params.staged[1]}  {params.staged[0]}' | sha256sum --check --strict --quiet > {log} 2>&1 "
        "&& cp {params.staged[0]:q} {output} 2>> {log}"
