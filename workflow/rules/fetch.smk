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
