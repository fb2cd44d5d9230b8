#!/bin/bash
# Nightly fuzzptx campaign as a Slurm job array: one shard per array task, one node (and its
# GPUs) per shard, then one merged report.
#
#   sbatch examples/slurm_nightly.sh                # 4 shards, 8 hours each
#   sbatch --array=0-15 examples/slurm_nightly.sh   # 16 shards
#
# Each task's shard comes from SLURM_ARRAY_TASK_ID (less SLURM_ARRAY_TASK_MIN) of
# SLURM_ARRAY_TASK_COUNT: fuzzptx campaign reads them when --shard is not given, so every task
# runs the same command.  All shards share one seed (the date): together they are one campaign,
# each taking the blocks b with b % n == i.  A task that is preempted or requeued resumes its own
# directory (--resume; its lock, campaign.lock, names the host and pid that holds it, and a dead
# holder's lock is taken over).
#SBATCH --job-name=fuzzptx-nightly
#SBATCH --array=0-3
#SBATCH --nodes=1
#SBATCH --gres=gpu:8
#SBATCH --cpus-per-task=64
#SBATCH --time=08:30:00
#SBATCH --requeue
#SBATCH --signal=B:TERM@300
#SBATCH --output=fuzzptx-%A_%a.log
set -euo pipefail

ROOT=${FUZZPTX_ROOT:-$HOME/fuzzptx-nightly}
SEED=${FUZZPTX_SEED:-$(date -u +%Y%m%d)}
RUN=$ROOT/$SEED
SHARD_DIR=$RUN/shard-${SLURM_ARRAY_TASK_ID}
mkdir -p "$RUN"

RESUME=()
[ -s "$SHARD_DIR/results.jsonl" ] && RESUME=(--resume)   # a requeued task carries on

# --signal=B:TERM@300 sends SIGTERM five minutes before the time limit: the campaign stops
# between blocks and writes stats.json last, so the record and its figures agree.
# B: delivers the signal to this batch shell only, so the trap passes it on to the campaign.
fuzzptx campaign --seed "$SEED" --time 8h --gpus all --out "$SHARD_DIR" "${RESUME[@]}" &
PID=$!
trap 'kill -TERM "$PID" 2>/dev/null' TERM
wait "$PID" || wait "$PID"   # a trapped signal ends the first wait early

# The last task to finish merges every shard into one report (report refuses a shard given
# twice, or shards of another seed).
DONE=$(ls -d "$RUN"/shard-*/stats.json 2>/dev/null | wc -l)
if [ "$DONE" -eq "$SLURM_ARRAY_TASK_COUNT" ] && mkdir "$RUN/.merging" 2>/dev/null; then
  KNOWN=()
  [ -n "${FUZZPTX_KNOWN:-}" ] && KNOWN=(--known "$FUZZPTX_KNOWN")   # buckets already filed: skipped, not failed
  fuzzptx report "$RUN"/shard-* --out "$RUN/report" "${KNOWN[@]}"
fi
