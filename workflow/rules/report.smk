# Every grading process of the runs that audit a prompt set wrote its audit (grade.smk); this is
# the prompt set's, which they must agree on.
rule audit_prompts:
    input:
        prompt_audits,
    output:
        plan.prompt_audit("{dataset}"),
    log:
        "logs/audit_prompts/{dataset}.log",
    shell:
        "ifaudit combine-audits {input} --out {output} > {log} 2>&1"


rule stats:
    input:
        grades=plan.run_file("{run}", "grades.jsonl"),
        prompts=run_prompts,
    output:
        plan.run_file("{run}", "stats.json"),
    log:
        "logs/{run}/stats.log",
    priority: 1
    params:
        statistics=statistics_args(),
        task=run_task,
    shell:
        "ifaudit stats --task {params.task} --grades {input.grades} --prompts {input.prompts} {params.statistics} "
        "--out {output} > {log} 2>&1"


rule compare:
    input:
        a_grades=plan.run_file("{a}", "grades.jsonl"),
        b_grades=plan.run_file("{b}", "grades.jsonl"),
        a_prompts=lambda wildcards: plan.dataset_file(RUNS[wildcards.a]["prompts"]),
        b_prompts=lambda wildcards: plan.dataset_file(RUNS[wildcards.b]["prompts"]),
    output:
        plan.comparison("{a}", "{b}"),
    log:
        "logs/comparisons/{a}/{b}.log",
    params:
        statistics=statistics_args(),
        task=lambda wildcards: RUNS[wildcards.a]["task"],
    shell:
        "ifaudit compare --task {params.task} --a-grades {input.a_grades} --a-prompts {input.a_prompts} "
        "--b-grades {input.b_grades} --b-prompts {input.b_prompts} {params.statistics} "
        "--out {output} > {log} 2>&1"


rule report:
    input:
        **report_inputs(),
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
        per_type=[
            report(
                plan.report_file(f"plots/breakdown_{run}.png"),
                caption="../report/per_type.rst",
                category="2. Plots",
            )
            for run in RUNS
        ],
        per_type_svg=[plan.report_file(f"plots/breakdown_{run}.svg") for run in RUNS],
        # For the paper: booktabs tables and the artifact appendix's text (ifaudit.steps.paper).
        paper=[plan.report_file(name) for name in plan.paper_files(_report_plan())],
    log:
        "logs/report.log",
    params:
        plan=report_plan(),
        out=lambda wildcards, output: Path(output.markdown).parent,
    shell:
        "ifaudit report --plan-json {params.plan} --out-dir {params.out} > {log} 2>&1"
