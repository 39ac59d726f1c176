// The SOL levels (DESIGN.md §5): per-op roofline, unfused SOL, fused SOL.
#pragma once

#include <string>
#include <vector>

#include "solar/bound/policy.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/device.h"
#include "solar/ir/graph.h"

namespace solar::bound {

// One time term: the time a resource needs for its share of the work.
struct Term {
  std::string resource;  // "tensor_core.bf16", "fp32_simt.f32", "mufu", "dram", "l2"
  double seconds = 0;
};

struct OpBound {
  double seconds = 0;           // max over terms (units run concurrently)
  std::string bottleneck;       // the resource of the largest term
  std::vector<Term> terms;
  std::vector<std::string> unknown;  // work whose unit has no published rate (left out)
};

struct LevelBound {
  double seconds = 0;
  std::string bottleneck;
  std::vector<Term> terms;   // per resource: summed over ops (unfused) or whole graph (fused)
  std::vector<std::string> unknown;
};

struct DeviceBounds {
  std::string device_id;
  Options options;
  std::vector<OpBound> per_op;  // indexed by OpId; unanalyzed ops have seconds 0 and bottleneck "unanalyzed"
  LevelBound unfused;           // sum over ops of the per-op roofline
  LevelBound fused;             // whole graph, compulsory traffic
};

DeviceBounds compute_bounds(const ir::Graph& g, const cost::GraphCost& cost,
                            const hw::Device& device, const Options& options);

}  // namespace solar::bound
