// Data-movement kernels against naive reference loops (random shapes, strides and paddings)
// and exact known results. Most cases run through run_graph so that both the copying kernels
// and the executor's zero-copy views are checked against the same reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "exec_fixtures.h"
#include "solar/exec/kernels.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::list;
using testing::make;
using testing::random;
using testing::ravel;
using testing::run_text;
using testing::unravel;
using testing::values;

std::vector<std::int64_t> random_shape(std::mt19937& rng, int min_rank, int max_rank,
                                       int max_extent) {
  int r = std::uniform_int_distribution<int>(min_rank, max_rank)(rng);
  std::vector<std::int64_t> s(r);
  for (auto& e : s) e = std::uniform_int_distribution<int>(1, max_extent)(rng);
  return s;
}

// ---- view / copy ---------------------------------------------------------------------------

TEST(Move, ViewReshapeSharesMemory) {
  Buffer x = make(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5});
  ExecStats stats;
  TensorMap out = run_text("x = f32[2,3] input\nv = f32[3,2]{output} move view (x)",
                           {{"x", x}}, {}, {}, &stats);
  EXPECT_EQ(values(out["v"]), values(x));  // row-major reshape keeps the element order
  EXPECT_EQ(out["v"].shape(), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(out["v"].raw_data(), x.raw_data());  // no copy
  EXPECT_EQ(stats.views, 1);
  EXPECT_EQ(stats.allocated_bytes, 0u);
}

TEST(Move, ViewBroadcastExpands) {
  Buffer b = make(DType::F32, {1, 3}, {7, 8, 9});
  TensorMap out = run_text("b = f32[1,3] input\ne = f32[2,2,3]{output} move view (b)", {{"b", b}});
  EXPECT_EQ(values(out["e"]), (std::vector<double>{7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8, 9}));
}

TEST(Move, ViewReinterpretsBitsAcrossDtypes) {
  Buffer x = make(DType::F32, {2}, {1.0, -2.0});
  TensorMap out = run_text("x = f32[2] input\nv = i32[2]{output} move view (x)", {{"x", x}});
  // IEEE-754 binary32: 1.0 = 0x3f800000, -2.0 = 0xc0000000 (as a signed 32-bit integer).
  EXPECT_EQ(values(out["v"]), (std::vector<double>{0x3f800000, -0x40000000}));
}

TEST(Move, CopyRepeatMatchesModuloReference) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<std::int64_t> in = random_shape(rng, 1, 3, 4);
    std::vector<std::int64_t> out;
    int extra = std::uniform_int_distribution<int>(0, 1)(rng);
    for (int i = 0; i < extra; ++i) out.push_back(std::uniform_int_distribution<int>(1, 3)(rng));
    for (std::int64_t e : in) out.push_back(e * std::uniform_int_distribution<int>(1, 3)(rng));
    Buffer x = random(DType::F32, in, rng);
    TensorMap r = run_text(fmt::format("x = f32{} input\ny = f32{}{{output}} move copy (x)",
                                       list(in), list(out)),
                           {{"x", x}});
    std::vector<double> got = values(r["y"]), xv = values(x);
    const std::size_t off = out.size() - in.size();
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
      std::vector<std::int64_t> p = unravel(i, out), q(in.size());
      for (std::size_t d = 0; d < in.size(); ++d) q[d] = p[d + off] % in[d];  // torch.repeat
      ASSERT_EQ(got[i], xv[ravel(q, in)]) << list(in) << " -> " << list(out) << " at " << i;
    }
  }
}

// ---- permute / slice / pad / concat --------------------------------------------------------

TEST(Move, PermuteMatchesReference) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::int64_t> in = random_shape(rng, 1, 4, 6);
    std::vector<std::int64_t> perm(in.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::int64_t> out(in.size());
    for (std::size_t d = 0; d < in.size(); ++d) out[d] = in[perm[d]];
    DType dt = trial % 2 ? DType::F64 : DType::I32;
    Buffer x = random(dt, in, rng);
    std::string ty(ir::dtype_name(dt));
    TensorMap r = run_text(fmt::format("x = {0}{1} input\ny = {0}{2}{{output}} move permute "
                                       "{{perm={3}}} (x)",
                                       ty, list(in), list(out), list(perm)),
                           {{"x", x}});
    std::vector<double> got = values(r["y"]), xv = values(x);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
      std::vector<std::int64_t> p = unravel(i, out), q(in.size());
      for (std::size_t d = 0; d < in.size(); ++d) q[perm[d]] = p[d];  // out dim d = in dim perm[d]
      ASSERT_EQ(got[i], xv[ravel(q, in)]);
    }
  }
}

TEST(Move, TiledTransposeMatchesReference) {
  // Shapes past the 32x32 tile of the transpose path, with partial tiles at the edges.
  std::mt19937 rng(13);
  struct Case {
    std::vector<std::int64_t> in, perm;
  };
  for (const Case& c : {Case{{70, 45}, {1, 0}}, Case{{3, 40, 50}, {0, 2, 1}},
                        Case{{40, 3, 33}, {2, 1, 0}}, Case{{2, 64, 5, 96}, {3, 1, 0, 2}}}) {
    std::vector<std::int64_t> out(c.in.size());
    for (std::size_t d = 0; d < c.in.size(); ++d) out[d] = c.in[c.perm[d]];
    Buffer x = random(DType::F32, c.in, rng);
    ExecOptions two;
    two.threads = 2;
    TensorMap r = run_text(fmt::format("x = f32{} input\ny = f32{}{{output}} move permute "
                                       "{{perm={}}} (x)",
                                       list(c.in), list(out), list(c.perm)),
                           {{"x", x}}, two);
    std::vector<double> got = values(r["y"]), xv = values(x);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
      std::vector<std::int64_t> p = unravel(i, out), q(c.in.size());
      for (std::size_t d = 0; d < c.in.size(); ++d) q[c.perm[d]] = p[d];
      ASSERT_EQ(got[i], xv[ravel(q, c.in)]) << list(c.in) << " perm " << list(c.perm);
    }
  }
}

TEST(Move, LargePermuteUsesThreadsAndMatches) {
  std::mt19937 rng(3);
  Buffer x = random(DType::F32, {64, 300, 17}, rng);
  ExecOptions two;
  two.threads = 2;
  TensorMap r = run_text("x = f32[64,300,17] input\n"
                         "y = f32[17,64,300]{output} move permute {perm=[2,0,1]} (x)",
                         {{"x", x}}, two);
  std::vector<double> got = values(r["y"]), xv = values(x);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); i += 7) {
    std::vector<std::int64_t> p = unravel(i, {17, 64, 300});
    ASSERT_EQ(got[i], xv[ravel({p[1], p[2], p[0]}, {64, 300, 17})]);
  }
}

TEST(Move, SliceMatchesReferenceAndSharesContiguousBlocks) {
  std::mt19937 rng(4);
  int views = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::int64_t> in = random_shape(rng, 1, 4, 7);
    std::vector<std::int64_t> starts, ends, steps, out;
    for (std::int64_t n : in) {
      bool whole = std::uniform_int_distribution<int>(0, 2)(rng) == 0;
      std::int64_t s = whole ? 0 : std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng);
      std::int64_t e = whole ? n : std::uniform_int_distribution<std::int64_t>(s + 1, n)(rng);
      std::int64_t st = whole ? 1 : std::uniform_int_distribution<std::int64_t>(1, 3)(rng);
      starts.push_back(s);
      ends.push_back(e);
      steps.push_back(st);
      out.push_back((e - s + st - 1) / st);  // ceil((end - start) / step)
    }
    Buffer x = random(DType::F32, in, rng);
    ExecStats stats;
    TensorMap r = run_text(fmt::format("x = f32{} input\ny = f32{}{{output}} move slice "
                                       "{{starts={}, ends={}, steps={}}} (x)",
                                       list(in), list(out), list(starts), list(ends), list(steps)),
                           {{"x", x}}, {}, {}, &stats);
    views += stats.views;
    std::vector<double> got = values(r["y"]), xv = values(x);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
      std::vector<std::int64_t> p = unravel(i, out);
      for (std::size_t d = 0; d < in.size(); ++d) p[d] = starts[d] + p[d] * steps[d];
      ASSERT_EQ(got[i], xv[ravel(p, in)]) << "slice " << list(starts) << list(ends) << list(steps);
    }
  }
  EXPECT_GT(views, 0);  // some random slices are one contiguous block
}

TEST(Move, SliceOfRowsIsAView) {
  Buffer x = make(DType::F32, {4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  TensorMap r = run_text("x = f32[4,3] input\n"
                         "y = f32[2,3]{output} move slice {starts=[1,0], ends=[3,3]} (x)",
                         {{"x", x}});
  EXPECT_EQ(values(r["y"]), (std::vector<double>{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(r["y"].raw_data(), static_cast<const float*>(x.raw_data()) + 3);  // row 1 onwards
}

TEST(Move, PadMatchesReferenceWithCropping) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::int64_t> in = random_shape(rng, 1, 3, 5);
    std::vector<std::int64_t> pads, out;
    for (std::int64_t n : in) {
      // Negative pads crop (never below an empty dimension).
      std::int64_t b = std::uniform_int_distribution<std::int64_t>(-(n - 1) / 2, 3)(rng);
      std::int64_t a = std::uniform_int_distribution<std::int64_t>(-(n - 1) / 2, 3)(rng);
      pads.push_back(b);
      pads.push_back(a);
      out.push_back(n + b + a);
    }
    Buffer x = random(DType::F32, in, rng);
    TensorMap r = run_text(fmt::format("x = f32{} input\ny = f32{}{{output}} move pad "
                                       "{{pads={}, value=-1.5}} (x)",
                                       list(in), list(out), list(pads)),
                           {{"x", x}});
    std::vector<double> got = values(r["y"]), xv = values(x);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
      std::vector<std::int64_t> p = unravel(i, out);
      bool inside = true;
      for (std::size_t d = 0; d < in.size(); ++d) {
        p[d] -= pads[2 * d];  // output coordinate minus the padding before it
        inside = inside && p[d] >= 0 && p[d] < in[d];
      }
      ASSERT_EQ(got[i], inside ? xv[ravel(p, in)] : -1.5) << "pads " << list(pads);
    }
  }
}

TEST(Move, PadValueRoundsToTheDtype) {
  Buffer x = make(DType::BF16, {1}, {1});
  TensorMap r = run_text("x = bf16[1] input\ny = bf16[2]{output} move pad {pads=[1,0], value=0.1} (x)",
                         {{"x", x}});
  // bf16 keeps 8 significant bits: 0.1 rounds to 0.10009765625 (0x3dcd).
  EXPECT_EQ(values(r["y"]), (std::vector<double>{0.10009765625, 1}));
}

TEST(Move, PadIntegerTensorNeedsIntegralValue) {
  Buffer x = make(DType::I32, {2}, {1, 2});
  try {
    run_text("x = i32[2] input\ny = i32[4]{output} move pad {pads=[1,1], value=0.5} (x)", {{"x", x}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("op 'y'"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("pad value 0.5 cannot fill an integer tensor"), std::string::npos)
        << e.message();
  }
}

TEST(Move, ConcatMatchesReference) {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<std::int64_t> base = random_shape(rng, 1, 4, 5);
    std::int64_t axis = std::uniform_int_distribution<std::int64_t>(0, base.size() - 1)(rng);
    int k = std::uniform_int_distribution<int>(1, 3)(rng);
    std::string text;
    std::vector<Buffer> parts;
    std::vector<std::int64_t> sizes;
    TensorMap src;
    std::vector<std::string> names;
    for (int j = 0; j < k; ++j) {
      std::vector<std::int64_t> s = base;
      s[axis] = std::uniform_int_distribution<std::int64_t>(1, 4)(rng);
      sizes.push_back(s[axis]);
      std::string name = fmt::format("x{}", j);
      names.push_back(name);
      src[name] = random(DType::I64, s, rng);
      text += fmt::format("{} = i64{} input\n", name, list(s));
    }
    std::vector<std::int64_t> out = base;
    out[axis] = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
    text += fmt::format("y = i64{}{{output}} move concat {{axis={}}} ({})", list(out), axis,
                        fmt::join(names, ", "));
    TensorMap r = run_text(text, src);
    std::vector<double> got = values(r["y"]);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
      std::vector<std::int64_t> p = unravel(i, out);
      int j = 0;
      while (p[axis] >= sizes[j]) p[axis] -= sizes[j++];  // which input holds this coordinate
      std::vector<std::int64_t> s = base;
      s[axis] = sizes[j];
      ASSERT_EQ(got[i], src[names[j]].value(ravel(p, s)));
    }
  }
}

// ---- gather / scatter ----------------------------------------------------------------------

TEST(Move, GatherTakeMatchesIndexSelect) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<std::int64_t> data = random_shape(rng, 1, 3, 5);
    std::int64_t axis = std::uniform_int_distribution<std::int64_t>(0, data.size() - 1)(rng);
    std::vector<std::int64_t> index = random_shape(rng, 0, 2, 4);
    std::vector<std::int64_t> out(data.begin(), data.begin() + axis);
    out.insert(out.end(), index.begin(), index.end());
    out.insert(out.end(), data.begin() + axis + 1, data.end());
    Buffer x = random(DType::F32, data, rng);
    // Negative indices count from the end.
    Buffer idx = random(DType::I64, index, rng, -data[axis], data[axis] - 1);
    TensorMap r = run_text(fmt::format("x = f32{} input\ni = i64{} input\n"
                                       "y = f32{}{{output}} move gather {{axis={}}} (x, i)",
                                       list(data), list(index), list(out), axis),
                           {{"x", x}, {"i", idx}});
    std::vector<double> got = values(r["y"]), xv = values(x), iv = values(idx);
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(got.size()); ++e) {
      std::vector<std::int64_t> p = unravel(e, out);
      std::vector<std::int64_t> ip(p.begin() + axis, p.begin() + axis + index.size());
      std::vector<std::int64_t> q(p.begin(), p.begin() + axis);
      auto v = static_cast<std::int64_t>(iv[ravel(ip, index)]);
      q.push_back(v < 0 ? v + data[axis] : v);
      q.insert(q.end(), p.begin() + axis + index.size(), p.end());
      ASSERT_EQ(got[e], xv[ravel(q, data)]);
    }
  }
}

TEST(Move, GatherElementsMatchesTorchGather) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<std::int64_t> data = random_shape(rng, 1, 3, 5);
    std::int64_t axis = std::uniform_int_distribution<std::int64_t>(0, data.size() - 1)(rng);
    std::vector<std::int64_t> index(data.size());
    for (std::size_t d = 0; d < data.size(); ++d)
      index[d] = static_cast<std::int64_t>(d) == axis
                     ? std::uniform_int_distribution<std::int64_t>(1, 6)(rng)
                     : std::uniform_int_distribution<std::int64_t>(1, data[d])(rng);
    Buffer x = random(DType::F32, data, rng);
    Buffer idx = random(DType::I32, index, rng, 0, data[axis] - 1);
    TensorMap r = run_text(fmt::format("x = f32{} input\ni = i32{} input\n"
                                       "y = f32{}{{output}} move gather {{axis={}, "
                                       "mode=\"elements\"}} (x, i)",
                                       list(data), list(index), list(index), axis),
                           {{"x", x}, {"i", idx}});
    std::vector<double> got = values(r["y"]), xv = values(x), iv = values(idx);
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(got.size()); ++e) {
      std::vector<std::int64_t> p = unravel(e, index);
      p[axis] = static_cast<std::int64_t>(iv[e]);  // out[p] = data[p with p[axis] = index[p]]
      ASSERT_EQ(got[e], xv[ravel(p, data)]);
    }
  }
}

TEST(Move, GatherIndexOutOfRangeNamesOpAndValue) {
  Buffer x = make(DType::F32, {10, 4}, std::vector<double>(40, 1));
  Buffer i = make(DType::I64, {3}, {0, 10, 2});
  try {
    run_text("x = f32[10,4] input\ni = i64[3] input\nemb = f32[3,4]{output} move gather {axis=0} (x, i)",
             {{"x", x}, {"i", i}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("op 'emb'"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("gather index value 10 at position [1]"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("valid: -10 .. 9"), std::string::npos) << e.message();
  }
}

// Naive torch.scatter / scatter_reduce / index_add, written independently of the kernel.
double reduce_ref(const std::string& r, double acc, double v) {
  if (r == "sum" || r == "mean") return acc + v;
  if (r == "prod") return acc * v;
  if (r == "max") return std::max(acc, v);
  if (r == "min") return std::min(acc, v);
  return v;
}

TEST(Move, ScatterElementsMatchesReferenceForEveryReduction) {
  std::mt19937 rng(9);
  const char* reduces[] = {"none", "sum", "prod", "max", "min", "mean"};
  for (int trial = 0; trial < 60; ++trial) {
    std::string reduce = reduces[trial % 6];
    bool include_self = (trial / 6) % 2 == 0;
    std::vector<std::int64_t> data = random_shape(rng, 1, 3, 5);
    std::int64_t axis = std::uniform_int_distribution<std::int64_t>(0, data.size() - 1)(rng);
    std::vector<std::int64_t> index(data.size()), src(data.size());
    for (std::size_t d = 0; d < data.size(); ++d) {
      index[d] = static_cast<std::int64_t>(d) == axis
                     ? std::uniform_int_distribution<std::int64_t>(1, 6)(rng)
                     : std::uniform_int_distribution<std::int64_t>(1, data[d])(rng);
      src[d] = index[d] + std::uniform_int_distribution<std::int64_t>(0, 1)(rng);
    }
    Buffer x = random(DType::F64, data, rng);
    Buffer idx = random(DType::I64, index, rng, 0, data[axis] - 1);
    Buffer s = random(DType::F64, src, rng);
    TensorMap r = run_text(
        fmt::format("x = f64{} input\ni = i64{} input\ns = f64{} input\n"
                    "y = f64{}{{output}} move scatter {{axis={}, reduce=\"{}\", include_self={}}} "
                    "(x, i, s)",
                    list(data), list(index), list(src), list(data), axis, reduce,
                    include_self ? 1 : 0),
        {{"x", x}, {"i", idx}, {"s", s}});
    std::vector<double> want = values(x), iv = values(idx), sv = values(s);
    std::vector<int> count(want.size(), include_self ? 1 : 0);
    std::vector<bool> touched(want.size(), false);
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(iv.size()); ++e) {
      std::vector<std::int64_t> p = unravel(e, index);
      double v = sv[ravel(p, src)];
      p[axis] = static_cast<std::int64_t>(iv[e]);
      std::int64_t t = ravel(p, data);
      if (reduce != "none" && !include_self && !touched[t]) {
        want[t] = v;
      } else {
        want[t] = reduce_ref(reduce, want[t], v);
      }
      touched[t] = true;
      ++count[t];
    }
    if (reduce == "mean")
      for (std::size_t t = 0; t < want.size(); ++t)
        if (touched[t] && count[t] > 0) want[t] /= count[t];
    std::vector<double> got = values(r["y"]);
    for (std::size_t t = 0; t < want.size(); ++t)
      ASSERT_NEAR(got[t], want[t], 1e-12 * (1 + std::fabs(want[t])))
          << reduce << " include_self=" << include_self << " at " << t;
  }
}

TEST(Move, ScatterTakeIsIndexAdd) {
  // index_add along axis 0: rows 0 and 2 of x receive src rows (row 0 twice).
  Buffer x = make(DType::I32, {3, 2}, {1, 1, 1, 1, 1, 1});
  Buffer i = make(DType::I64, {3}, {0, 2, 0});
  Buffer s = make(DType::I32, {3, 2}, {10, 20, 30, 40, 50, 60});
  TensorMap r = run_text("x = i32[3,2] input\ni = i64[3] input\ns = i32[3,2] input\n"
                         "y = i32[3,2]{output} move scatter {axis=0, mode=\"take\", reduce=\"sum\"} (x, i, s)",
                         {{"x", x}, {"i", i}, {"s", s}});
  EXPECT_EQ(values(r["y"]), (std::vector<double>{1 + 10 + 50, 1 + 20 + 60, 1, 1, 1 + 30, 1 + 40}));
}

TEST(Move, ScatterSumWrapsNarrowIntegers) {
  Buffer x = make(DType::I8, {1}, {100});
  Buffer i = make(DType::I64, {2}, {0, 0});
  Buffer s = make(DType::I8, {2}, {100, 100});
  TensorMap r = run_text("x = i8[1] input\ni = i64[2] input\ns = i8[2] input\n"
                         "y = i8[1]{output} move scatter {axis=0, mode=\"take\", reduce=\"sum\"} (x, i, s)",
                         {{"x", x}, {"i", i}, {"s", s}});
  EXPECT_EQ(values(r["y"]), (std::vector<double>{300 - 256}));  // int8 two's complement
}

// ---- cast ----------------------------------------------------------------------------------

TEST(Move, CastRoundsAndTruncates) {
  Buffer x = make(DType::F32, {4}, {1.00390625, -2.7, 3.5, 0});
  TensorMap r = run_text("x = f32[4] input\n"
                         "b = bf16[4]{output} move cast (x)\n"
                         "i = i32[4]{output} move cast (x)\n"
                         "t = bool[4]{output} move cast (x)\n"
                         "d = f64[4]{output} move cast (x)",
                         {{"x", x}});
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even gives 1.
  EXPECT_EQ(values(r["b"])[0], 1.0);
  EXPECT_EQ(values(r["b"])[1], -2.703125);  // nearest bf16 to -2.7 (8 significant bits)
  EXPECT_EQ(values(r["i"]), (std::vector<double>{1, -2, 3, 0}));  // toward zero
  EXPECT_EQ(values(r["t"]), (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(values(r["d"])[1], static_cast<double>(-2.7f));
}

TEST(Move, CastWrapsIntegers) {
  Buffer x = make(DType::I64, {3}, {200, -1, 256});
  TensorMap r = run_text("x = i64[3] input\n"
                         "a = i8[3]{output} move cast (x)\n"
                         "b = u8[3]{output} move cast (x)",
                         {{"x", x}});
  EXPECT_EQ(values(r["a"]), (std::vector<double>{200 - 256, -1, 0}));
  EXPECT_EQ(values(r["b"]), (std::vector<double>{200, 255, 0}));
}

TEST(Move, CastOfUnrepresentableFloatIsRefused) {
  Buffer x = make(DType::F32, {2}, {1, 300});
  try {
    run_text("x = f32[2] input\nc = i8[2]{output} move cast (x)", {{"x", x}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("cast of 300 (element 1) to i8 is undefined"), std::string::npos)
        << e.message();
  }
}

// ---- direct kernel calls -------------------------------------------------------------------

TEST(Move, KernelChecksInputCount) {
  ir::MoveOp m;
  m.kind = ir::MoveKind::Gather;
  m.attrs["axis"] = std::int64_t{0};
  Buffer x = make(DType::F32, {2}, {1, 2});
  Buffer y = Buffer::zeros(DType::F32, {2});
  const Buffer* ins[] = {&x};
  EXPECT_THROW(run_move(m, ins, y, {}), UserError);
}

}  // namespace
}  // namespace solar::exec
