"""Runs on a 'GPU host' as a real sandbox job (standard library only): judges each kernel directory named
on the command line by the sha256 of its kernel.py, through `table.json`, and writes `result.json`.

The fleet tests' stand-in for the harness, which needs 10-20 s per evaluation on this CPU (torch import
and the Triton interpreter, twice); everything around it — leases, SSH, bubblewrap, uploads, sync-back,
environment failures — is the real path. `hold_s` keeps a job on its GPU for a while, like a timed run
(`hold_s_where` longer where the job directory's path contains a marker: a job to lose a host under).
"""

import hashlib
import json
import os
import sys
import time

with open("table.json") as f:
    table = json.load(f)
open("started", "w").close()
out = {}
for label in sys.argv[1:]:
    with open(f"{label}/kernel.py", "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    status, latency = table["kernels"].get(sha, table["default"])
    out[label] = {"sha256": sha, "status": status, "latency_us": latency}
hold = float(table.get("hold_s", 0))
for where, seconds in table.get("hold_s_where", {}).items():  # e.g. {"/h2/": 5}: longer on one host
    if where in os.getcwd():
        hold = float(seconds)
time.sleep(hold)
with open("result.json", "w") as f:
    json.dump(out, f)
