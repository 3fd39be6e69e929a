"""The default health probe: is this device usable right now? (stdlib + torch only; runs as a job)

Run after a failed command to tell a bad candidate (probe passes) from a dead GPU or host (probe fails,
exit 75). It allocates on the device, checks arithmetic against a known answer, synchronises and reads
the device properties. `--cpu` checks the same on the CPU (tests, GPU-less hosts). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def probe(device: str) -> dict[str, object]:
    import torch

    info: dict[str, str] = {"torch": torch.__version__}
    if device == "cuda":
        if not torch.cuda.is_available():
            return {"healthy": False, "diagnostic": "torch.cuda.is_available() is False", "device": info}
        props = torch.cuda.get_device_properties(0)
        info.update(
            name=props.name,
            capability=f"{props.major}.{props.minor}",
            total_memory_bytes=str(props.total_memory),
            multiprocessors=str(props.multi_processor_count),
            uuid=str(getattr(props, "uuid", "")),
            cuda=str(torch.version.cuda),
        )
    started = time.perf_counter()
    n = 256
    a = torch.arange(n * n, dtype=torch.float32, device=device).reshape(n, n) % 7
    ones = torch.ones(n, n, dtype=torch.float32, device=device)
    product = a @ ones  # each entry: row sum of a, known exactly in float32
    expected = (a.sum(dim=1, keepdim=True)).expand(n, n)
    block = torch.empty(64 * 1024 * 1024 // 4, dtype=torch.float32, device=device).fill_(1.5)
    if device == "cuda":
        torch.cuda.synchronize()
    total = float(block.sum().item())
    if not torch.equal(product, expected) or total != 1.5 * block.numel():
        return {"healthy": False, "diagnostic": "arithmetic check gave a wrong answer", "device": info}
    info["probe_ms"] = f"{(time.perf_counter() - started) * 1000:.1f}"
    return {"healthy": True, "diagnostic": "", "device": info}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--cpu", action="store_const", const="cpu", dest="device", help="probe the CPU")
    group.add_argument("--device", choices=("cuda", "cpu"), dest="device")
    parser.set_defaults(device="cuda")
    args = parser.parse_args(argv)
    try:
        report = probe(args.device)
    except Exception as exc:  # any failure of the device is the finding, not a crash
        report = {"healthy": False, "diagnostic": f"{type(exc).__name__}: {exc}", "device": {}}
    print(json.dumps(report))
    return 0 if report["healthy"] else 1


if __name__ == "__main__":
    sys.exit(main())
