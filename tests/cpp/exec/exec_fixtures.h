// Test helpers for the executor's graph-level tests: buffers from values, random buffers,
// values back out, and a one-call run of a graph written in the text form.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "solar/exec/buffer.h"
#include "solar/exec/executor.h"
#include "solar/ir/text.h"

namespace solar::exec::testing {

inline Buffer make(ir::DType d, std::vector<std::int64_t> shape, const std::vector<double>& v) {
  Buffer b = Buffer::zeros(d, std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(b.num_elements()), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (b.storage()) {
      case Storage::F32: b.data<float>()[i] = static_cast<float>(v[i]); break;
      case Storage::F64: b.data<double>()[i] = v[i]; break;
      case Storage::I64: b.data<std::int64_t>()[i] = static_cast<std::int64_t>(v[i]); break;
    }
  }
  if (b.storage() == Storage::F32)
    round_to_dtype(d, std::span<float>(b.data<float>(), v.size()));
  return b;
}

// Random values: floats uniform in [-4, 4) rounded to the dtype, integers in [lo, hi].
inline Buffer random(ir::DType d, std::vector<std::int64_t> shape, std::mt19937& rng,
                     std::int64_t lo = -50, std::int64_t hi = 50) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  std::vector<double> v(static_cast<std::size_t>(n));
  std::uniform_real_distribution<double> real(-4, 4);
  std::uniform_int_distribution<std::int64_t> integer(lo, hi);
  for (double& x : v) x = ir::is_float(d) ? real(rng) : static_cast<double>(integer(rng));
  return make(d, std::move(shape), v);
}

inline std::vector<double> values(const Buffer& b) {
  std::vector<double> v(static_cast<std::size_t>(b.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = b.value(static_cast<std::int64_t>(i));
  return v;
}

inline std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// The multi-index of flat element i.
inline std::vector<std::int64_t> unravel(std::int64_t i, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> pos(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    pos[d] = i % shape[d];
    i /= shape[d];
  }
  return pos;
}

inline std::int64_t ravel(const std::vector<std::int64_t>& pos,
                          const std::vector<std::int64_t>& shape) {
  std::int64_t i = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + pos[d];
  return i;
}

inline std::string list(const std::vector<std::int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ","));
}

// Parses `text` and runs it on `sources`; returns the outputs (and kept tensors).
inline TensorMap run_text(const std::string& text, const TensorMap& sources,
                          const ExecOptions& options = {}, const std::set<std::string>& keep = {},
                          ExecStats* stats = nullptr) {
  ir::Graph g = ir::parse_graph(text);
  return run_graph(g, sources, options, keep, stats);
}

}  // namespace solar::exec::testing
