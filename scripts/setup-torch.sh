#!/usr/bin/env bash
# Prepares .venv-torch/ (git-ignored): a virtual environment with PyPI's torch 2.11.0 (the version
# the GPU machine has), for building and testing tiledsl::torch. The wheel links CUDA libraries;
# the toolkit's in /usr/local/cuda stand in for most of torch's CUDA wheels, so only the three it
# lacks are installed, without dependencies (cuFile, cuSPARSELt, NVSHMEM: about 220 MB). Sourced by
# run-tests.sh; sets TILEDSL_TORCH_PYTHON, or leaves it empty (and says why) when torch cannot be
# installed or imported. TILEDSL_TORCH=0 skips it.
tiledsl_torch_setup() {
  TILEDSL_TORCH_PYTHON=""
  [ "${TILEDSL_TORCH:-1}" = "0" ] && { echo "tiledsl: TILEDSL_TORCH=0: tiledsl::torch is not built"; return 0; }
  local venv="$PWD/.venv-torch" py="$PWD/.venv-torch/bin/python"
  local libs="/usr/local/cuda/lib64:/usr/local/cuda/lib"
  if ! LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$py" -c "import torch" 2>/dev/null; then
    echo "tiledsl: installing torch 2.11.0 into .venv-torch (for tiledsl::torch)"
    python3 -m venv "$venv" &&
      "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps torch==2.11.0 \
        nvidia-cufile==1.15.1.6 nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5 &&
      "$venv/bin/pip" install --quiet --disable-pip-version-check --no-warn-conflicts typing_extensions sympy networkx jinja2 filelock \
        fsspec numpy ||
      { echo "tiledsl: could not install torch: tiledsl::torch is not built"; return 0; }
  fi
  if LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$py" -c "import torch" 2>/dev/null; then
    TILEDSL_TORCH_PYTHON="$py"
    export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    echo "tiledsl: .venv-torch cannot import torch: tiledsl::torch is not built"
  fi
}
tiledsl_torch_setup
