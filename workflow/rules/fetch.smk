# `shards: auto` counts a run's fetched responses to plan its grading jobs (common.smk's
# shard_count), so only then is `fetch` a checkpoint: Snakemake rebuilds every job downstream of a
# checkpoint once its output is there, each time the DAG is built (at 100 runs, the whole DAG twice).
if config["shards"] == "auto":

    checkpoint fetch:
        input:
            local_dataset_inputs,
        output:
            data=plan.dataset_file("{dataset}"),
            record=plan.dataset_record("{dataset}"),
        log:
            "logs/fetch/{dataset}.log",
        params:
            job=lambda wildcards: PLAN.fetch_job(wildcards.dataset),
        shell:
            "ifaudit {params.job:q} > {log} 2>&1"

else:

    rule fetch:
        input:
            local_dataset_inputs,
        output:
            data=plan.dataset_file("{dataset}"),
            record=plan.dataset_record("{dataset}"),
        log:
            "logs/fetch/{dataset}.log",
        params:
            job=lambda wildcards: PLAN.fetch_job(wildcards.dataset),
        shell:
            "ifaudit {params.job:q} > {log} 2>&1"
