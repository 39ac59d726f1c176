// Test helper: lowering hand-written aten traces and checking their work by formula (live
// points counted by enumerating each einsum's box, independent of the cost model's closed
// forms; the tests keep boxes small).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "lower/trace_builder.h"
#include "solar/ir/graph.h"
#include "solar/ir/verify.h"
#include "solar/lower/aten.h"

namespace solar::lower::testing {

inline nlohmann::json T(int id) { return {{"tensor", id}}; }

// Live points of an einsum, by enumerating its box.
inline std::int64_t live_points(const ir::EinsumOp& e) {
  const std::size_t n = e.indices.size();
  std::vector<std::int64_t> at(n, 0);
  std::int64_t live = 0;
  while (true) {
    bool ok = true;
    for (const ir::AffineConstraint& c : e.mask) ok = ok && c.expr.evaluate(at.data()) >= 0;
    live += ok;
    std::size_t d = 0;
    for (; d < n; ++d) {
      if (++at[d] < e.indices[d].extent) break;
      at[d] = 0;
    }
    if (d == n) return live;
  }
}

// Multiply-accumulates: live points of every mul+sum contraction.
inline std::int64_t macs(const ir::Graph& g) {
  std::int64_t total = 0;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum &&
        op.einsum().combine.is_product_of_two_operands())
      total += live_points(op.einsum());
  return total;
}

inline int count_kind(const ir::Graph& g, ir::OpKind k) {
  int n = 0;
  for (const ir::Op& op : g.ops()) n += op.kind() == k;
  return n;
}

// The op producing trace tensor `trace_id`.
inline const ir::Op& producer(const ir::Graph& g, int trace_id, const LowerResult& r) {
  for (std::size_t t = 0; t < r.trace_ids.size(); ++t)
    if (r.trace_ids[t] == trace_id)
      return g.op(*g.producer(ir::TensorId{static_cast<std::uint32_t>(t)}));
  throw std::runtime_error("no such trace tensor in the graph");
}

// Lowers a torch trace strictly (an op it cannot model fails the test) and verifies it.
inline LowerResult lower_ok(const TraceBuilder& t) {
  LowerResult r = lower_aten(t.build(), {.strict = true});
  ir::verify(r.graph);
  return r;
}

// Taps (q, r) of one spatial dim whose read position q*s + r*d - pad lies in [0, size).
inline std::int64_t in_range_taps(std::int64_t q_ext, std::int64_t r_ext, std::int64_t s,
                                  std::int64_t d, std::int64_t pad, std::int64_t size) {
  std::int64_t n = 0;
  for (std::int64_t q = 0; q < q_ext; ++q)
    for (std::int64_t r = 0; r < r_ext; ++r)
      n += q * s + r * d - pad >= 0 && q * s + r * d - pad < size;
  return n;
}

}  // namespace solar::lower::testing
