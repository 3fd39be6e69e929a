"""Side effects the graph's nodes call: sandbox, GPU harness, workspace, ledger, records, health, arch."""
