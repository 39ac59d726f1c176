// Re-association of contraction chains: the same math with fewer MACs (docs/insight.md).
//
// A group is a tree of contractions (sum of the product of two operands, plain subscripts,
// no mask) whose intermediates are used once, linked through ops that only relabel
// dimensions (views, expands, permutes, copies). Its network is the sum-product over
// labels: every tensor entering the group (a leaf, one per use) with one label per factor of
// its dimensions, refined so that every reshape inside the group is a relabeling; the group
// computes out[output labels] = sum over the other labels of the product of its leaves.
// Any binary tree over the leaves computes the same function; its cost is the sum, over its
// pairwise steps, of the product of the extents of the labels a step touches (its MACs).
// Steps whose operands are all weights or constants do not depend on the inputs: they are
// "absorbed" (precomputed once, offline, as DeepSeek's MLA absorbs its up-projections) and
// cost nothing per run; their MACs are reported apart.
#pragma once

#include <string>
#include <vector>

#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::insight {

struct Leaf {
  ir::TensorId tensor;      // a tensor from outside the group (one leaf per use)
  std::vector<int> labels;  // one per factor of its row-major refined shape
};

// A pairwise contraction of a chosen order. Operands number the leaves first (0..n-1),
// then the steps (n, n+1, ...).
struct Step {
  int a = -1, b = -1;
  std::vector<int> labels;  // the labels the result keeps, in order
  Count macs;               // product of the extents of every label the step touches
  bool absorbed = false;    // all its leaves are weights or constants: precomputed offline
};

struct Reassociation {
  std::vector<ir::OpId> ops;  // the group's ops (contractions and relabelings), graph order
  ir::TensorId output;        // what the group computes (its last op's output)
  std::vector<std::int64_t> extents;  // by label
  std::vector<Leaf> leaves;
  std::vector<int> output_labels;     // of `output`, row-major refined
  int contractions = 0;               // contraction ops in the group
  Count macs_as_written;              // the group's contraction MACs as the program runs them
  Count macs_least;                   // per run, in the best order (absorbed steps excluded)
  Count macs_absorbed;                // of the best order's absorbed steps (once, offline)
  std::vector<Step> best;             // the best order
  bool exhaustive = true;             // the order is optimal (false: greedy, many leaves)
  // The group as one einsum over its labels, and the best order as nested pairwise products
  // ("((x·Wq)·(Wuk))·c"), for reports.
  std::string expression;
  std::string order;
};

// Every group of at least two contractions, in graph order of their outputs.
std::vector<Reassociation> find_reassociations(const ir::Graph& g);

// `g` with the group computed in its best order: free views of the leaves to their refined
// shapes, one einsum per step, a free view of the result to the group's output (which keeps
// its tensor id, name and role). The result is verified; executing it gives the group's
// function on any inputs (tests/cpp/insight checks it by running both).
ir::Graph reassociated(const ir::Graph& g, const Reassociation& r);

}  // namespace solar::insight
