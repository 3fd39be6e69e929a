"""Side effects the graph's nodes call, in two rooms that mirror the design.

- `evaluator/`: everything that decides a verdict on a kernel — the GPU-side harness (a separately shipped
  program: standard library and torch only), the sandboxes that run it, the coordinator's evaluation
  client, the health probe and the architecture table.
- `records/`: what the campaign keeps — the git workspace, the ledger, `memory/vN.json`, the verification
  statistics, the report and the submission.
"""
