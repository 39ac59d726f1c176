#!/usr/bin/env bash
# The inverse roofline of a robot policy's control step (pi0: PaliGemma-3B + a 300M action
# expert, 10 flow-matching steps over a 50-action chunk) at 50 Hz and 500 Hz on Jetson AGX
# Orin, Jetson AGX Thor and H100 SXM: the least compute, DRAM bandwidth and on-chip memory
# each rate needs, and how far each device is from it (README.md here; docs/models.md,
# "Robot policies"). Each run builds and captures the policy from its configuration on fake
# tensors (no weights, no network): about a minute on one core.
#
#   bash examples/robotics/run.sh [OUT_DIR]     # default: build/robotics
set -euo pipefail
out=${1:-build/robotics}
mkdir -p "$out"
devices=(--arch Jetson_Orin --arch Jetson_Thor --arch H100_SXM)
for hz in 50 500; do
  solar inverse hf:pi0-paligemma-3b --rate-hz "$hz" "${devices[@]}" \
      --json "$out/pi0_${hz}hz.json" | tee "$out/pi0_${hz}hz.txt"
done
# The control step itself at the fused SOL on each device (the report's `policy` section:
# control_step_seconds and max_rate_hz per device).
solar analyze hf:pi0-paligemma-3b "${devices[@]}" --json "$out/pi0_step.json" \
    | tee "$out/pi0_step.txt"
