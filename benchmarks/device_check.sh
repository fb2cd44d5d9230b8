#!/bin/bash
# The device check behind tests/hw_records/gpu_tests_h100.json: every gpu-marked test, the sass and
# findings tests, and a 150-second all-judge campaign with --plant-faults reported against
# reports/known_bugs.toml.  Run from the repository root on the GPU machine (the device tool
# copies the tree there); results go to $OUT.
R=$PWD
rm -rf /tmp/pkg && mkdir -p /tmp/pkg && cp -r fuzzptx /tmp/pkg/ && cp -r strategies /tmp/pkg/fuzzptx/strategies && cp -r oracles /tmp/pkg/fuzzptx/oracles
export PYTHONPATH=/tmp/pkg FUZZPTX_PTXAS=/usr/local/cuda/bin/ptxas
cd /tmp
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; /usr/local/cuda/bin/ptxas --version | tail -2; python3 -c "import cupy, numpy, hypothesis; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'hypothesis', hypothesis.__version__)") > $OUT/device.txt 2>&1
python3 -m pytest -p fuzzptx.pytest_plugin -p no:cacheprovider -c $R/pyproject.toml --rootdir $R -m gpu -q -n 4 --junitxml=$OUT/gpu_junit.xml $R/tests 2>&1 | tail -4
python3 -m pytest -p fuzzptx.pytest_plugin -p no:cacheprovider -c $R/pyproject.toml --rootdir $R -q -n 4 --junitxml=$OUT/sass_junit.xml $R/tests/test_sass_judge.py $R/tests/test_findings.py 2>&1 | tail -3
python3 -m fuzzptx.cli campaign --time 150 --gpus all --seed 28 --judges reference,checker,ptxas,hardware --plant-faults --quiet --out /tmp/camp 2>&1 | tail -15
python3 -m fuzzptx.cli report /tmp/camp --known $R/reports/known_bugs.toml 2>&1 | tail -5
mkdir -p $OUT/camp && cp /tmp/camp/stats.json /tmp/camp/summary.json /tmp/camp/junit.xml /tmp/camp/campaign.json $OUT/camp/ 2>/dev/null
ls /tmp/camp
