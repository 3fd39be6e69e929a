"""The build subprocess: `python -m <harness>.languages.ext_main JOB.json`.

Runs `torch.utils.cpp_extension.load` (ninja + the host compiler, nvcc for CUDA sources) on the staged
sources with the solution's flags, in the environment its parent gave this process only (MAX_JOBS,
TORCH_CUDA_ARCH_LIST, TORCH_EXTENSIONS_DIR), then checks that the module binds the entry point.
Writes `result.json` beside JOB.json: `{"so": path}` or `{"error": message}` for a module that built
but cannot be used; a failed compile leaves the compiler's output in the log and exits 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    out = Path(job_path).with_name("result.json")
    from torch.utils import cpp_extension

    build_dir = Path(job["build_directory"])
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        module = cpp_extension.load(
            name=job["name"],
            sources=job["sources"],
            extra_cflags=job["cflags"],
            extra_cuda_cflags=job["cuda_cflags"],
            extra_ldflags=job["ld_flags"],
            extra_include_paths=job["include_dirs"],
            build_directory=str(build_dir),
            with_cuda=job["with_cuda"],
            verbose=True,
        )
    except ImportError as exc:  # built, but the shared object does not load (undefined symbol, ...)
        out.write_text(json.dumps({"error": f"the built extension does not load: {exc}"}))
        return 1
    except Exception as exc:  # the compiler's own output is already in the log
        print(f"build failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    symbol = job["symbol"]
    if not callable(getattr(module, symbol, None)):
        out.write_text(
            json.dumps(
                {
                    "error": f"the extension binds no {symbol!r} (the entry point): add "
                    f'm.def("{symbol}", &{symbol}); to its PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)'
                }
            )
        )
        return 1
    out.write_text(json.dumps({"so": str(Path(module.__file__).resolve())}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
