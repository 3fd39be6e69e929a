"""The campaign's records: git workspace, ledger, memory files, verdict statistics, report, submission."""
