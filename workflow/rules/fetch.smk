checkpoint fetch:
    input:
        local_dataset_inputs,
    output:
        data=plan.dataset_file("{dataset}"),
        record=plan.dataset_record("{dataset}"),
    log:
        "logs/fetch/{dataset}.log",
    params:
        sources=fetch_args,
    shell:
        "ifaudit fetch --name {wildcards.dataset} {params.sources} --out {output.data} --record {output.record} > {log} 2>&1"
