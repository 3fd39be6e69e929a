#!/usr/bin/env bash
# Build the kit a device run carries to the H200 (which has no package index), into the git-ignored .gpu/:
#   .gpu/whl/          pydantic and its compiled core for CPython 3.12 (the GPU image has no pydantic)
#   .gpu/coord/whl/    the rest of pyproject's runtime dependencies for cp312 manylinux x86_64, minus what
#                      the image already has (torch, triton, numpy, matplotlib); pip on the host picks
#   .gpu/coord/debs/   git (Debian 12) and its libraries, for images without git
#   .gpu/debs/         bubblewrap and its libraries, so jobs are isolated there as on a development host
#   .gpu/shared/       a copy of ../shared/fixtures (the device receives this repository only)
#   .gpu/sol/          the SOL-ExecBench CLI's source (from a `fetch`ed mirror; never committed) and the
#                      wheels its triton/pytorch/C++ paths import that the image lacks, for the side-by-side
#                      timing: apache-tvm-ffi, torch-c-dlpack-ext, cupti-python and pyelftools (cupti-python
#                      imports elftools; the image has click, rich, safetensors, numpy, cuda-bindings)
# Usage: bash scripts/build_gpu_kit.sh [SOL_EXECBENCH_GIT_DIR]   (idempotent; re-run after a dependency changes)
# Then name `.gpu` in the device call's `carry`; benchmarks/gpu_demo.sh and benchmarks/gpu_session.sh use it.
#
# The CuTe DSL (nvidia-cutlass-dsl) is NOT in .gpu: a device call carries 64 MiB in all and the kit is
# ~51 MB, while the DSL is ~97 MB of wheels for CUDA 13 (4.8: libs-base 3 MB + libs-core 1.6 MB + libs-cu13
# 92 MB) or one 59 MB wheel (4.3.5, the last single-wheel release, built for CUDA 12.9: the H200's CUDA 13
# driver ran it in round 5). KIT_CUTE_DSL=1 builds the git-ignored .gpu_dsl/ for a device call of its
# own that carries only `.gpu_dsl` (~55 MB): that wheel's files as one xz tar, the SOL-ExecBench CLI and
# pydantic (`bash benchmarks/gpu_languages.sh dsl`).
set -euo pipefail
cd "$(dirname "$0")/.."
SOL_GIT=${1:-/work/.mirror/NVIDIA+SOL-ExecBench/repo}
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_34_x86_64
      --platform any)
PIP=(python3 -m pip download -q --disable-pip-version-check "${PLAT[@]}")

mkdir -p .gpu/whl .gpu/coord/whl .gpu/coord/debs .gpu/debs .gpu/sol/whl
echo "== pydantic (cp312)"
"${PIP[@]}" -d .gpu/whl pydantic

echo "== coordinator dependencies (cp312), without what the image has"
python3 - > /tmp/aka-kit-reqs.txt <<'PY'
import re, tomllib
data = tomllib.load(open("pyproject.toml", "rb"))["project"]
skip = {"torch", "triton", "numpy", "matplotlib", "pydantic"}
for dep in data["dependencies"] + data.get("optional-dependencies", {}).get("kit", []):
    if re.split(r"[<>=!~ ;\[]", dep)[0].lower() not in skip:
        print(dep)
PY
"${PIP[@]}" -d .gpu/coord/whl -r /tmp/aka-kit-reqs.txt
# numpy / torch pulled in as dependencies of dependencies are the image's: drop them from the kit
rm -f .gpu/coord/whl/numpy-* .gpu/coord/whl/torch-* .gpu/coord/whl/triton-* .gpu/coord/whl/nvidia_* \
      .gpu/coord/whl/matplotlib-* .gpu/coord/whl/pydantic-* .gpu/coord/whl/pydantic_core-*

# CUTLASS headers for the cutlass solution language (the harness finds them in the nvidia-cutlass wheel)
"${PIP[@]}" --no-deps -d .gpu/coord/whl nvidia-cutlass
for wheel in .gpu/whl/*.whl; do rm -f ".gpu/coord/whl/${wheel##*/}"; done  # one copy of each

echo "== Debian packages (git, bubblewrap)"
if command -v apt-get >/dev/null; then
  (cd .gpu/coord/debs && apt-get download -q git git-man zlib1g libcurl3-gnutls liberror-perl 2>/dev/null || true)
  (cd .gpu/debs && apt-get download -q bubblewrap libcap2 libselinux1 libpcre2-8-0 2>/dev/null || true)
fi

if [ -d ../shared/fixtures ]; then
  rm -rf .gpu/shared && mkdir -p .gpu/shared && cp -r ../shared/fixtures .gpu/shared/
fi

if [ -d "$SOL_GIT" ]; then
  echo "== SOL-ExecBench CLI from $SOL_GIT"
  rm -rf .gpu/sol/src && mkdir -p .gpu/sol/src
  git --git-dir "$SOL_GIT" archive HEAD src examples | tar -x -C .gpu/sol/src
  "${PIP[@]}" --no-deps -d .gpu/sol/whl cupti-python apache-tvm-ffi torch-c-dlpack-ext pyelftools || true
else
  echo "(no SOL-ExecBench mirror at $SOL_GIT: the side-by-side timing will be skipped)"
fi
if [ "${KIT_CUTE_DSL:-0}" = 1 ]; then
  # the wheel unpacked and packed again with xz (59 MB -> 41 MB), so that the SOL-ExecBench CLI (.gpu/sol)
  # and pydantic, which it imports, fit beside it: the CuTe DSL solution side by side with the CLI
  echo "== CuTe DSL (for a device call of its own: carry .gpu_dsl)"
  rm -rf .gpu_dsl && mkdir -p .gpu_dsl/whl /tmp/aka-dsl-wheel /tmp/aka-dsl-site
  "${PIP[@]}" --no-deps -d /tmp/aka-dsl-wheel 'nvidia-cutlass-dsl==4.3.5'
  rm -rf /tmp/aka-dsl-site/* && python3 -m zipfile -e /tmp/aka-dsl-wheel/nvidia_cutlass_dsl-*.whl /tmp/aka-dsl-site
  tar -C /tmp/aka-dsl-site -cf - . | xz -9 -T0 > .gpu_dsl/cute_dsl_site.tar.xz
  cp -r .gpu/sol .gpu_dsl/sol && cp .gpu/whl/*.whl .gpu_dsl/whl/
  du -sh .gpu_dsl
fi
du -sh .gpu .gpu/* | sort -k2
