rule environment:
    output:
        plan.environment_record("{task}"),
    log:
        "logs/environment/{task}.log",
    params:
        job=lambda wildcards: PLAN.vendor_job(wildcards.task),
    shell:
        "ifaudit {params.job:q} > {log} 2>&1"
