// The workload in AccelForge's YAML workload format (PyPI `accelforge`, the successor of
// Timeloop's Python front end): `workload: einsums: [...]`, read by accelforge.Spec.from_yaml.
//
// Each Einsum has an explicit iteration space (`iteration_space_shape`: one `0 <= i < N`
// per rank variable, plus the mask's constraints as ISL inequalities) and no `rank_sizes`,
// so its operation count (Workload.n_computes) is Solar's live points: out-of-range
// (padding) points stay operations, as Solar counts them. Tensor accesses carry dict
// projections onto per-tensor rank names (`A_M: m`, `X_H: "2*p + r - 1"`) and the tensor's
// bits per value; renames name `input`, `weight` and `output` for architecture constraints.
// Solar's own figures and what was left out are in YAML comments (and solar-export.json).
#pragma once

#include <string>

#include "solar/interop/workload.h"

namespace solar::interop {

// The YAML text of `w` (file workload.yaml). Contains no Jinja delimiters, which
// AccelForge's loader would expand.
std::string accelforge_yaml(const Workload& w);

}  // namespace solar::interop
