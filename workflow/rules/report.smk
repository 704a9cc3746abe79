# Every grading process of the runs that audit a prompt set wrote its audit (grade.smk); this is
# the prompt set's, which they must agree on.
rule audit_prompts:
    input:
        prompt_audits,
    output:
        "results/prompts/{dataset}.json",
    log:
        "logs/audit_prompts/{dataset}.log",
    shell:
        "ifaudit combine-audits {input} --out {output} > {log} 2>&1"


rule stats:
    input:
        grades="results/{run}/grades.jsonl",
        prompts=run_prompts,
    output:
        "results/{run}/stats.json",
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
        a_grades="results/{a}/grades.jsonl",
        b_grades="results/{b}/grades.jsonl",
        a_prompts=lambda wildcards: dataset_file(RUNS[wildcards.a]["prompts"]),
        b_prompts=lambda wildcards: dataset_file(RUNS[wildcards.b]["prompts"]),
    output:
        "results/comparisons/{a}/{b}.json",
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
        markdown="results/report.md",
        runs_html=report("results/html/runs.html", caption="../report/runs.rst", category="1. Results"),
        published_html=report(
            "results/html/published.html",
            caption="../report/published.rst",
            category="1. Results",
        ),
        comparisons_html=report(
            "results/html/comparisons.html",
            caption="../report/comparisons.rst",
            category="1. Results",
        ),
        overview_html="results/html/overview.html",
        metrics=report("results/metrics.csv", caption="../report/metrics.rst", category="3. Tables (CSV)"),
        comparisons=report(
            "results/comparisons.csv",
            caption="../report/comparisons.rst",
            category="3. Tables (CSV)",
        ),
        breakdown=report(
            "results/breakdown.csv",
            caption="../report/breakdown.rst",
            category="3. Tables (CSV)",
        ),
        tables="results/tables.json",
        accuracy=report(
            "results/plots/accuracy.png",
            caption="../report/accuracy.rst",
            category="2. Plots",
        ),
        accuracy_svg="results/plots/accuracy.svg",
        differences=report(
            "results/plots/differences.png",
            caption="../report/differences.rst",
            category="2. Plots",
        ),
        differences_svg="results/plots/differences.svg",
        per_type=[
            report(
                f"results/plots/breakdown_{run}.png",
                caption="../report/per_type.rst",
                category="2. Plots",
            )
            for run in RUNS
        ],
        per_type_svg=[f"results/plots/breakdown_{run}.svg" for run in RUNS],
    log:
        "logs/report.log",
    params:
        plan=report_plan(),
    shell:
        "ifaudit report --plan-json {params.plan} --out-dir results > {log} 2>&1"
