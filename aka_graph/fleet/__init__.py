"""Fleets: many campaigns on a pool of SSH GPU hosts, run by one or more coordinators through PostgreSQL.

SQLite stays the embedded default for one user on one machine. Given a database URL, the campaign's graph
state lives in LangGraph's Postgres checkpointer and the ledger, the campaign registry, the campaign
leases and the GPU leases live in the same database (`schema.py`), so any coordinator on any machine can
pick up, resume, stop or report any campaign. Modules: `database` (URL, connection pools), `schema`
(migrations), `registry` (campaigns and their leases), `gpu_leases` (hosts, GPUs, lease log),
`hosts` (the hosts file), `pool` (a `Sandbox` over the pool), `checkpointer`, `coordinator` (`fleet work`),
`submission` (the campaigns file), `report`, `server` (the LangGraph API server's checkpointer).
"""
