#!/bin/sh
# ptxas 13.0.88 gave the files here (pip install nvidia-cuda-nvcc==13.0.88: it was /root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas); another release: PTXAS=/path/to/ptxas sh commands.sh
set -x
PTXAS="${PTXAS:-ptxas}"
"$PTXAS" -arch=sm_90a -O3 repro.ptx -o O3.cubin
"$PTXAS" -arch=sm_90a -O0 repro.ptx -o O0.cubin
nvdisasm -c O3.cubin > sass_O3.txt
nvdisasm -c O0.cubin > sass_O0.txt
# with fuzzptx installed: every judge again (drop --no-hardware on a machine with an sm_90a GPU)
fuzzptx replay repro.ptx --no-hardware  # expect hardware:O3!=O0|mismatch|other
# which releases have it: fuzzptx bisect repro.ptx --keep 'hardware:O3!=O0|mismatch|other' --ptxas all
