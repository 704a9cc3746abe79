# Every grading process of the runs that audit a prompt set wrote its audit (grade.smk); this is
# the prompt set's, which they must agree on.
rule audit_prompts:
    input:
        audits=prompt_audits,
        checked=BATCHES_CHECKED,
    output:
        plan.prompt_audit("{dataset}"),
    log:
        "logs/audit_prompts/{dataset}.log",
    shell:
        "ifaudit combine-audits {input.audits} --out {output} > {log} 2>&1"


rule stats:
    input:
        grades=plan.run_file("{run}", "grades.jsonl"),
        prompts=run_prompts,
    output:
        plan.run_file("{run}", "stats.json"),
    log:
        "logs/{run}/stats.log",
    # Runs of batches are the batch jobs' (batch.smk).
    wildcard_constraints:
        run=UNBATCHED_RUN,
    priority: 1
    params:
        job=lambda wildcards: PLAN.stats_job(wildcards.run),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"


# One job per task and prompt set compares all its pairs (ifaudit.steps.planning.plan.comparison_jobs).
for job in COMPARISON_JOBS:

    rule:
        name:
            job["rule"]
        input:
            grades=[plan.run_file(run, "grades.jsonl") for run in job["runs"]],
            prompts=[PLAN.prompts(run) for run in job["runs"]],
            checked=BATCHES_CHECKED,
        output:
            [plan.comparison(a, b) for a, b in job["pairs"]],
        log:
            job["log"],
        params:
            job=PLAN.compare_many_job(job),
        shell:
            "ifaudit {params.job:q} > {log} 2>&1"


rule report:
    input:
        **plan.report_inputs(REPORT_PLAN),
        checked=BATCHES_CHECKED,
    output:
        markdown=plan.report_file("report.md"),
        runs_html=report(plan.report_file("html/runs.html"), caption="../report/runs.rst", category="1. Results"),
        published_html=report(
            plan.report_file("html/published.html"),
            caption="../report/published.rst",
            category="1. Results",
        ),
        comparisons_html=report(
            plan.report_file("html/comparisons.html"),
            caption="../report/comparisons.rst",
            category="1. Results",
        ),
        overview_html=plan.report_file("html/overview.html"),
        metrics=report(plan.report_file("metrics.csv"), caption="../report/metrics.rst", category="3. Tables (CSV)"),
        comparisons=report(
            plan.report_file("comparisons.csv"),
            caption="../report/comparisons.rst",
            category="3. Tables (CSV)",
        ),
        breakdown=report(
            plan.report_file("breakdown.csv"),
            caption="../report/breakdown.rst",
            category="3. Tables (CSV)",
        ),
        tables=plan.report_file("tables.json"),
        leaderboard=report(
            plan.report_file("plots/leaderboard.png"),
            caption="../report/leaderboard.rst",
            category="2. Plots",
        ),
        leaderboard_svg=plan.report_file("plots/leaderboard.svg"),
        accuracy=report(
            plan.report_file("plots/accuracy.png"),
            caption="../report/accuracy.rst",
            category="2. Plots",
        ),
        accuracy_svg=plan.report_file("plots/accuracy.svg"),
        differences=report(
            plan.report_file("plots/differences.png"),
            caption="../report/differences.rst",
            category="2. Plots",
        ),
        differences_svg=plan.report_file("plots/differences.svg"),
        # One folder of per-run plots, not two outputs a run: Snakemake records every input's
        # checksum once per output, so at 100 runs 212 outputs made 63,600 of them.
        per_type=report(
            directory(plan.BREAKDOWN_PLOTS),
            patterns=["{name}.png"],
            caption="../report/per_type.rst",
            category="2. Plots",
        ),
        # For the paper: booktabs tables and the artifact appendix's text (ifaudit.steps.reporting.paper).
        paper=[plan.report_file(name) for name in plan.paper_files(REPORT_PLAN)],
    log:
        "logs/report.log",
    params:
        job=PLAN.report_job(*REPORT_PLAN_FILE),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"
