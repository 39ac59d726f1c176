// Repeat ops in the runner: every graph runs to the same values as ir::unroll's flat graph,
// bit for bit. Both forms run the same kernels on the same shapes: a sliced param is a view
// of its row (or, where the row is not one contiguous block, a fresh copy) in both, carried
// values are the previous iteration's results in both, and stacking only moves words, so no
// floating-point operation differs in order or operands.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec_fixtures.h"
#include "solar/exec/executor.h"
#include "solar/exec/validate.h"
#include "solar/ir/text.h"
#include "solar/ir/unroll.h"
#include "solar/ir/verify.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::make;
using testing::random;
using testing::values;

// Random values for every input, weight and constant of `g`.
TensorMap random_sources(const ir::Graph& g, std::mt19937& rng) {
  TensorMap m;
  for (const ir::Tensor& t : g.tensors())
    if (ir::is_graph_source(t.role)) m.emplace(t.name, random(t.dtype, t.shape, rng));
  return m;
}

// Equal bit patterns (NaN payloads included): both forms run the same arithmetic.
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Runs `g` and its unrolled form on the same random sources and compares every output;
// returns the repeat form's outputs.
TensorMap expect_same_as_unrolled(const ir::Graph& g, std::uint32_t seed,
                                  const ExecOptions& options = {}) {
  std::mt19937 rng(seed);
  TensorMap sources = random_sources(g, rng);
  const ir::Graph flat = ir::unroll(g);
  ir::verify(flat);
  for (const ir::Op& op : flat.ops()) EXPECT_NE(op.kind(), ir::OpKind::Repeat);
  TensorMap got = run_graph(g, sources, options);
  TensorMap want = run_graph(flat, sources, options);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << "no output '" << name << "'";
      continue;
    }
    const Buffer& v = it->second;
    EXPECT_EQ(v.shape(), w.shape()) << name;
    EXPECT_EQ(v.dtype(), w.dtype()) << name;
    if (v.shape() != w.shape()) continue;
    std::int64_t bad = 0, first = -1;
    for (std::int64_t i = 0; i < w.num_elements(); ++i)
      if (!same_bits(v.value(i), w.value(i)) && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0) << "output '" << name << "': " << bad << " elements differ, first at "
                      << first << ": " << (first >= 0 ? v.value(first) : 0) << " vs "
                      << (first >= 0 ? w.value(first) : 0) << "\n"
                      << ir::print_graph(g);
  }
  return got;
}

TensorMap expect_same_as_unrolled(const std::string& text, std::uint32_t seed = 1) {
  return expect_same_as_unrolled(ir::parse_graph(text), seed);
}

template <class E>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "no error";
  } catch (const E& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message: " << e.what() << "\nwanted:  " << p;
  }
}

// ---- hand-written graphs ----------------------------------------------------------------

std::string rnn(const std::string& reverse, int trips = 5) {
  return fmt::format(R"(graph rnn
x = f32[{0},2,8] input
h0 = f32[2,16] input
w = f32[8,16] weight
u = f32[16,16] weight
hT, ys = f32[2,16]{{output}}, f32[{0},2,16]{{output}} repeat {0}{1} (sliced x axis 0 as xt, carried h0 as h next h1, invariant w as wb, invariant u as ub) -> (last h1, stacked h1 axis 0) {{
  xt = f32[2,8] input
  h = f32[2,16] input
  wb = f32[8,16] input
  ub = f32[16,16] input
  a = f32[2,16] einsum "bk,kn->bn" (xt, wb)
  b = f32[2,16] einsum "bk,kn->bn" (h, ub)
  h1 = f32[2,16]{{output}} einsum [b=2,n=16] none tanh(add($0,$1)) (a[b,n], b[b,n]) -> [b,n]
}}
)",
                     trips, reverse);
}

TEST(Repeat, RnnCellMatchesUnrolled) {
  TensorMap r = expect_same_as_unrolled(rnn(""));
  // The last state is the last stacked row (iteration 4 at index 4).
  std::vector<double> hT = values(r["hT"]), ys = values(r["ys"]);
  EXPECT_EQ(hT, std::vector<double>(ys.end() - 32, ys.end()));
}

TEST(Repeat, ReverseMatchesUnrolled) {
  TensorMap r = expect_same_as_unrolled(rnn(" reverse"));
  // Reverse runs row 4 first and row 0 last: the last state is row 0.
  std::vector<double> hT = values(r["hT"]), ys = values(r["ys"]);
  EXPECT_EQ(hT, std::vector<double>(ys.begin(), ys.begin() + 32));
}

TEST(Repeat, ReverseEqualsForwardOnFlippedSequence) {
  // A reverse scan over x equals a forward scan over x with its rows flipped, with its
  // stacked rows flipped back; computed by the runner twice, not pasted.
  ir::Graph fwd = ir::parse_graph(rnn("")), rev = ir::parse_graph(rnn(" reverse"));
  std::mt19937 rng(7);
  TensorMap src = random_sources(fwd, rng);
  TensorMap flipped = src;
  Buffer x = src["x"], fx = Buffer::zeros(DType::F32, x.shape());
  for (int t = 0; t < 5; ++t)
    std::memcpy(fx.data<float>() + t * 16, x.data<float>() + (4 - t) * 16, 16 * sizeof(float));
  flipped["x"] = fx;
  TensorMap a = run_graph(rev, src), b = run_graph(fwd, flipped);
  EXPECT_EQ(values(a["hT"]), values(b["hT"]));
  std::vector<double> ya = values(a["ys"]), yb = values(b["ys"]);
  for (int t = 0; t < 5; ++t)
    for (int j = 0; j < 32; ++j) EXPECT_EQ(ya[t * 32 + j], yb[(4 - t) * 32 + j]);
}

TEST(Repeat, OneTrip) {
  expect_same_as_unrolled(rnn("", 1));
  expect_same_as_unrolled(rnn(" reverse", 1));
}

TEST(Repeat, PassthroughAndSwappedCarriedValues) {
  // c passes through unchanged (its next is the param itself), v through a view, and a/b swap
  // every iteration; the stacked output is the sliced param itself.
  TensorMap r = expect_same_as_unrolled(R"(
x = f32[4,3] input
c0 = f32[3] input
v0 = f32[3] input
a0 = f32[3] input
b0 = f32[3] input
cT, vT, aT, bT, xs, s = f32[3]{output}, f32[3]{output}, f32[3]{output}, f32[3]{output}, f32[3,4]{output}, f32[3]{output} repeat 4 (sliced x axis 0 as xt, carried c0 as c next c, carried v0 as v next v1, carried a0 as a next b, carried b0 as b next a, carried a0 as acc next acc1) -> (last c, last v1, last a, last b, stacked xt axis 1, last acc1) {
  xt = f32[3] input
  c = f32[3] input
  v = f32[3] input
  a = f32[3] input
  b = f32[3] input
  acc = f32[3] input
  v1 = f32[3]{output} move view (v)
  acc1 = f32[3]{output} einsum [i=3] none add($0,$1) (acc[i], xt[i]) -> [i]
}
)");
  Buffer x;  // the same random draw as expect_same_as_unrolled's
  std::mt19937 rng(1);
  TensorMap src = random_sources(ir::parse_graph(R"(
x = f32[4,3] input
c0 = f32[3] input
v0 = f32[3] input
a0 = f32[3] input
b0 = f32[3] input
)"),
                                 rng);
  EXPECT_EQ(values(r["cT"]), values(src["c0"]));
  EXPECT_EQ(values(r["vT"]), values(src["v0"]));
  // Four swaps: a and b are back where they started. `last a` is a's value in the last
  // iteration (after three swaps: b0).
  EXPECT_EQ(values(r["aT"]), values(src["b0"]));
  EXPECT_EQ(values(r["bT"]), values(src["a0"]));
  // xs is x transposed.
  std::vector<double> xv = values(src["x"]), xs = values(r["xs"]);
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 3; ++i) EXPECT_EQ(xs[i * 4 + t], xv[t * 3 + i]);
}

TEST(Repeat, StackedAndSlicedAlongInnerAxes) {
  // x is sliced along axis 1 (rows are not contiguous: copied), ys stacks along axis 1 and
  // zs along the last axis (scratch, then a permute).
  expect_same_as_unrolled(R"(
x = f32[2,5,8] input
h0 = f32[2,16] input
w = f32[8,16] weight
hT, ys, zs = f32[2,16]{output}, f32[2,5,16]{output}, f32[2,16,5]{output} repeat 5 (sliced x axis 1 as xt, carried h0 as h next h1, invariant w as wb) -> (last h1, stacked h1 axis 1, stacked h1 axis 2) {
  xt = f32[2,8] input
  h = f32[2,16] input
  wb = f32[8,16] input
  a = f32[2,16] einsum "bk,kn->bn" (xt, wb)
  h1 = f32[2,16]{output} einsum [b=2,n=16] none tanh(add($0,$1)) (a[b,n], h[b,n]) -> [b,n]
}
)");
  // Leading extent 1: the row along axis 1 is contiguous again (a view, a direct write).
  expect_same_as_unrolled(R"(
x = f32[1,3,4] input
ys = f32[1,3,4]{output} repeat 3 reverse (sliced x axis 1 as xt) -> (stacked y axis 1) {
  xt = f32[1,4] input
  y = f32[1,4]{output} einsum [a=1,i=4] none mul($0,$0) (xt[a,i]) -> [a,i]
}
)");
}

constexpr const char* kNested = R"(
x = f32[3,4,2,5] input
s0 = f32[2,5] input
w = f32[5,5] weight
sT, ys = f32[2,5]{output}, f32[3,4,2,5]{output} repeat 3 (sliced x axis 0 as xo, carried s0 as s next s2, invariant w as wo) -> (last s2, stacked seq axis 0) {
  xo = f32[4,2,5] input
  s = f32[2,5] input
  wo = f32[5,5] input
  s2, seq = f32[2,5]{output}, f32[4,2,5]{output} repeat 4 reverse (sliced xo axis 0 as xi, carried s as si next si1, invariant wo as wi) -> (last si1, stacked si1 axis 0) {
    xi = f32[2,5] input
    si = f32[2,5] input
    wi = f32[5,5] input
    m = f32[2,5] einsum "bk,kn->bn" (si, wi)
    si1 = f32[2,5]{output} einsum [b=2,n=5] none tanh(add($0,$1)) (m[b,n], xi[b,n]) -> [b,n]
  }
}
)";

TEST(Repeat, NestedRepeatMatchesUnrolled) {
  ExecStats stats;
  ir::Graph g = ir::parse_graph(kNested);
  std::mt19937 rng(3);
  run_graph(g, random_sources(g, rng), {}, {}, &stats);
  // 1 outer repeat + 3 * (1 inner repeat + 4 * 2 einsums).
  EXPECT_EQ(stats.ops_run, 1 + 3 * (1 + 4 * 2));
  for (std::uint32_t seed = 1; seed <= 3; ++seed) expect_same_as_unrolled(g, seed);
}

TEST(Repeat, OnlyNeededResultsAreComputed) {
  // Nothing reads the repeat's result: the op is skipped.
  ir::Graph g = ir::parse_graph(R"(
x = f32[3,2] input
z = f32[2] input
y = f32[2]{output} move copy (z)
q = f32[3,2] repeat 3 (sliced x axis 0 as xt) -> (stacked y2 axis 0) {
  xt = f32[2] input
  y2 = f32[2]{output} einsum [i=2] none exp($0) (xt[i]) -> [i]
}
)");
  ExecStats stats;
  std::mt19937 rng(1);
  run_graph(g, random_sources(g, rng), {}, {}, &stats);
  EXPECT_EQ(stats.ops_run, 1);
  // Only hT is needed: the stacked result's own body op (e) does not run; the carried state
  // (h1 and what it reads) does.
  ir::Graph h = ir::parse_graph(R"(
x = f32[3,2] input
h0 = f32[2] input
hT, es = f32[2]{output}, f32[3,2] repeat 3 (sliced x axis 0 as xt, carried h0 as h next h1) -> (last h1, stacked e axis 0) {
  xt = f32[2] input
  h = f32[2] input
  h1 = f32[2]{output} einsum [i=2] none tanh(add($0,$1)) (h[i], xt[i]) -> [i]
  e = f32[2]{output} einsum [i=2] none exp($0) (h1[i]) -> [i]
}
)");
  rng.seed(2);
  TensorMap src = random_sources(h, rng);
  TensorMap r = run_graph(h, src, {}, {}, &stats);
  EXPECT_EQ(stats.ops_run, 1 + 3);
  EXPECT_EQ(r.count("es"), 0u);
  EXPECT_EQ(values(r["hT"]), values(run_graph(ir::unroll(h), src)["hT"]));
  // Kept, the stacked result is computed too.
  r = run_graph(h, src, {}, {"es"}, &stats);
  EXPECT_EQ(stats.ops_run, 1 + 3 * 2);
  EXPECT_EQ(values(r["es"]), values(run_graph(ir::unroll(h), src, {}, {"es"})["es"]));
}

TEST(Repeat, ThreadCountDoesNotChangeResults) {
  ir::Graph g = ir::parse_graph(kNested);
  std::mt19937 rng(5);
  TensorMap src = random_sources(g, rng);
  TensorMap a = run_graph(g, src, {.threads = 1}), b = run_graph(g, src, {.threads = 2});
  EXPECT_EQ(values(a["ys"]), values(b["ys"]));
}

TEST(Repeat, ValidatesLikeAnyGraph) {
  // References from the unrolled graph pass; a wrong stacked result fails.
  ir::Graph g = ir::parse_graph(rnn(" reverse"));
  std::mt19937 rng(4);
  TensorMap src = random_sources(g, rng);
  TensorMap ref = run_graph(ir::unroll(g), src);
  EXPECT_TRUE(validate(g, src, ref).pass);
  TensorMap bad = ref;
  bad["ys"] = Buffer::zeros(DType::F32, {5, 2, 16});
  ValidationResult v = validate(g, src, bad);
  EXPECT_FALSE(v.pass);
  ASSERT_EQ(v.outputs.size(), 2u);
  for (const OutputCheck& c : v.outputs) EXPECT_EQ(c.pass, c.name == "hT") << c.name;
}

// ---- memory ------------------------------------------------------------------------------

std::uint64_t bytes_of(const ir::Tensor& t) {
  return static_cast<std::uint64_t>(t.num_elements().to_double()) *
         storage_bytes(storage_for(t.dtype));
}

TEST(Repeat, PeakCountsOutputsBodyPeakAndCarriedState) {
  ir::Graph g = ir::parse_graph(rnn(""));
  const ir::Op& op = g.ops()[0];
  const ir::Graph& body = *op.repeat().body;
  std::mt19937 rng(1);
  TensorMap src = random_sources(g, rng);
  // The body's peak, from running it as a graph of its own.
  ExecStats body_stats;
  TensorMap body_src;
  for (const ir::Tensor& t : body.tensors())
    if (ir::is_graph_source(t.role)) body_src.emplace(t.name, Buffer::zeros(t.dtype, t.shape));
  run_graph(body, body_src, {}, {}, &body_stats);
  const std::uint64_t outputs =
      bytes_of(g.tensor(*g.find_tensor("hT"))) + bytes_of(g.tensor(*g.find_tensor("ys")));
  const std::uint64_t carried = bytes_of(body.tensor(*body.find_tensor("h")));
  const std::uint64_t want = outputs + body_stats.peak_bytes + carried;
  ExecStats stats;
  run_graph(g, src, {}, {}, &stats);
  EXPECT_EQ(stats.peak_bytes, want);
  EXPECT_EQ(stats.allocated_bytes, outputs + 5 * body_stats.allocated_bytes);
  EXPECT_EQ(stats.ops_run, 1 + 5 * 3);
  // Exactly at the peak it runs; one byte less is refused before anything runs.
  run_graph(g, src, {.memory_limit_bytes = want});
  expect_error<UserError>([&] { run_graph(g, src, {.memory_limit_bytes = want - 1}); },
                          {fmt::format("needs {} bytes of live tensors at op 'hT'", want),
                           "for one iteration of its body"});
}

TEST(Repeat, BodyTensorOverTheLimitIsNamed) {
  std::mt19937 rng(1);
  // Every outer tensor fits in 1000 bytes; the body's 'big' does not.
  ir::Graph h = ir::parse_graph(R"(
x = f32[2,4] input
y = f32[2,4]{output} repeat 2 (sliced x axis 0 as xt) -> (stacked big2 axis 0) {
  xt = f32[4] input
  big = f32[64,4] einsum [j=64,i=4] none $0 (xt[i]) -> [j,i]
  big2 = f32[4]{output} einsum [j=64,i=4] sum $0 (big[j,i]) -> [i]
}
)");
  expect_error<UserError>(
      [&] { run_graph(h, random_sources(h, rng), {.memory_limit_bytes = 1000}); },
      {"op 'y' (repeat body):", "tensor 'big' f32[64,4] needs 1024 bytes"});
}

// ---- errors ------------------------------------------------------------------------------

TEST(Repeat, MissingOrMismatchedSourceNamesTheTensor) {
  ir::Graph g = ir::parse_graph(rnn(""));
  std::mt19937 rng(1);
  TensorMap src = random_sources(g, rng);
  src.erase("h0");
  expect_error<UserError>([&] { run_graph(g, src); },
                          {"no value for input 'h0' f32[2,16] of graph 'rnn'"});
  src["h0"] = Buffer::zeros(DType::F32, {2, 8});
  expect_error<UserError>([&] { run_graph(g, src); },
                          {"value for input 'h0' is f32[2,8] but the graph declares f32[2,16]"});
  // Body tensors are not sources of the graph, nor can they be kept.
  src["h0"] = Buffer::zeros(DType::F32, {2, 16});
  src["xt"] = Buffer::zeros(DType::F32, {2, 8});
  expect_error<UserError>([&] { run_graph(g, src); },
                          {"'xt' is not an input, weight or constant of graph 'rnn'"});
  src.erase("xt");
  expect_error<UserError>([&] { run_graph(g, src, {}, {"a"}); }, {"cannot keep 'a'"});
}

TEST(Repeat, UnanalyzedBodyOpIsRefusedBeforeRunning) {
  expect_error<Unsupported>(
      [] {
        testing::run_text(R"(
x = f32[3,2] input
y = f32[3,2]{output} repeat 3 (sliced x axis 0 as xt) -> (stacked f axis 0) {
  xt = f32[2] input
  f = f32[2]{output} unanalyzed "aten::_fft_r2c" {reason="no lowering for FFT"} (xt)
}
)",
                          {{"x", Buffer::zeros(DType::F32, {3, 2})}});
      },
      {"op 'y' (repeat body): op 'f': unanalyzed framework op 'aten::_fft_r2c'"});
}

TEST(Repeat, KernelErrorNamesOpIterationAndBodyOp) {
  // The index row of iteration 2 is out of range.
  expect_error<UserError>(
      [] {
        testing::run_text(R"(
t = f32[4,2] input
i = i64[3,1] input
y = f32[3,1,2]{output} repeat 3 (sliced i axis 0 as it, invariant t as tb) -> (stacked g axis 0) {
  it = i64[1] input
  tb = f32[4,2] input
  g = f32[1,2]{output} move gather {axis=0} (tb, it)
}
)",
                          {{"t", Buffer::zeros(DType::F32, {4, 2})},
                           {"i", make(DType::I64, {3, 1}, {0, 3, 9})}});
      },
      {"op 'y': iteration 2 of 3: op 'g': ", "value 9", "out of range"});
}

// ---- random bodies -------------------------------------------------------------------------

// A random repeat op over state [B,N]: carried, sliced (along a random axis) and invariant
// params ([B,N] or an [N,N] matrix), a few elementwise and matmul einsums, carried next values
// and results drawn from everything of shape [B,N] (params included), random trips, order and
// stacking axes. Values stay bounded (tanh, max, halved differences).
std::string random_graph(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int B = pick(1, 3), N = pick(1, 5), trips = pick(1, 7);
  const bool reverse = pick(0, 1) == 1;
  const std::string st = fmt::format("[{},{}]", B, N);
  auto with_axis = [&](int axis) {
    std::vector<int> s{B, N};
    s.insert(s.begin() + axis, trips);
    return fmt::format("[{}]", fmt::join(s, ","));
  };
  std::string outer, bindings, body_inputs;
  std::vector<std::string> values;   // body tensors of shape [B,N]
  std::vector<std::string> mats;     // invariant [N,N] params
  std::vector<std::string> carried;  // carried params, in binding order
  const int nc = pick(0, 2), ns = pick(0, 2), ni = pick(0, 2);
  auto bind = [&](const std::string& s) { bindings += (bindings.empty() ? "" : ", ") + s; };
  for (int k = 0; k < nc; ++k) {
    outer += fmt::format("c{}0 = f32{} input\n", k, st);
    body_inputs += fmt::format("  c{} = f32{} input\n", k, st);
    carried.push_back(fmt::format("c{}", k));
    values.push_back(carried.back());
  }
  std::vector<std::string> sliced_bind;
  for (int k = 0; k < ns; ++k) {
    const int axis = pick(0, 2);
    outer += fmt::format("x{} = f32{} input\n", k, with_axis(axis));
    body_inputs += fmt::format("  xt{} = f32{} input\n", k, st);
    sliced_bind.push_back(fmt::format("sliced x{} axis {} as xt{}", k, axis, k));
    values.push_back(fmt::format("xt{}", k));
  }
  std::vector<std::string> inv_bind;
  for (int k = 0; k < ni; ++k) {
    const bool mat = pick(0, 1) == 1;
    const std::string shape = mat ? fmt::format("[{},{}]", N, N) : st;
    outer += fmt::format("w{} = f32{} weight\n", k, shape);
    body_inputs += fmt::format("  wb{} = f32{} input\n", k, shape);
    inv_bind.push_back(fmt::format("invariant w{} as wb{}", k, k));
    (mat ? mats : values).push_back(fmt::format("wb{}", k));
  }
  if (values.empty()) {  // at least one [B,N] value to compute from
    outer += fmt::format("w9 = f32{} weight\n", st);
    body_inputs += fmt::format("  wb9 = f32{} input\n", st);
    inv_bind.push_back("invariant w9 as wb9");
    values.push_back("wb9");
  }
  // Body ops.
  struct BodyOp {
    std::string name, text;
  };
  std::vector<BodyOp> ops;
  const int nops = pick(1, 5);
  auto one_of = [&](const std::vector<std::string>& v) {
    return v[static_cast<std::size_t>(pick(0, static_cast<int>(v.size()) - 1))];
  };
  auto any = [&] { return one_of(values); };
  // Elementwise combines over two [B,N] operands (the draws are sequenced: same graph on
  // every compiler).
  const char* binary[] = {"tanh(add($0,$1))", "tanh(mul($0,$1))", "max($0,$1)",
                          "mul(sub($0,$1),0.5)"};
  for (int k = 0; k < nops; ++k) {
    const std::string name = fmt::format("t{}", k);
    const int kind = pick(0, mats.empty() ? 4 : 5);
    const std::string ix = fmt::format("[b={},n={}]", B, N);
    const std::string x = any(), y = any();
    std::string text;
    if (kind < 4) {
      text = fmt::format("einsum {} none {} ({}[b,n], {}[b,n]) -> [b,n]", ix, binary[kind], x, y);
    } else if (kind == 4) {
      text = fmt::format("einsum {} none tanh($0) ({}[b,n]) -> [b,n]", ix, x);
    } else {
      text = fmt::format("einsum \"bk,kn->bn\" ({}, {})", x, one_of(mats));
    }
    ops.push_back({name, text});
    values.push_back(name);
  }
  // Next values, results.
  std::vector<std::string> nexts;
  for (std::size_t k = 0; k < carried.size(); ++k) nexts.push_back(any());
  struct Result {
    std::string value;
    int axis;  // -1: last
  };
  std::vector<Result> results;
  const int nres = pick(1, 3);
  for (int k = 0; k < nres; ++k) results.push_back({any(), pick(0, 1) ? pick(0, 2) : -1});
  auto is_result = [&](const std::string& v) {
    for (const std::string& n : nexts) if (n == v) return true;
    for (const Result& r : results) if (r.value == v) return true;
    return false;
  };
  for (std::size_t k = 0; k < carried.size(); ++k)
    bind(fmt::format("carried {}0 as {} next {}", carried[k], carried[k], nexts[k]));
  for (const std::string& s : sliced_bind) bind(s);
  for (const std::string& s : inv_bind) bind(s);
  std::vector<std::string> names, types, res;
  for (std::size_t k = 0; k < results.size(); ++k) {
    names.push_back(fmt::format("r{}", k));
    const Result& r = results[k];
    types.push_back(fmt::format("f32{}{{output}}", r.axis < 0 ? st : with_axis(r.axis)));
    res.push_back(r.axis < 0 ? fmt::format("last {}", r.value)
                             : fmt::format("stacked {} axis {}", r.value, r.axis));
  }
  std::string text = outer;
  text += fmt::format("{} = {} repeat {}{} ({}) -> ({}) {{\n", fmt::join(names, ", "),
                      fmt::join(types, ", "), trips, reverse ? " reverse" : "", bindings,
                      fmt::join(res, ", "));
  text += body_inputs;
  for (const BodyOp& op : ops)
    text += fmt::format("  {} = f32{}{} {}\n", op.name, st, is_result(op.name) ? "{output}" : "",
                        op.text);
  text += "}\n";
  return text;
}

TEST(Repeat, RandomBodiesMatchUnrolled) {
  int reverse = 0, carried = 0, inner_slice = 0, inner_stack = 0, matmul = 0;
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const std::string text = random_graph(rng);
    auto has = [&](const char* what) { return text.find(what) != std::string::npos; };
    reverse += has(" reverse (");
    carried += has("carried ");
    inner_slice += has("axis 1 as") || has("axis 2 as");
    inner_stack += has("axis 1)") || has("axis 2)") || has("axis 1,") || has("axis 2,");
    matmul += has("bk,kn->bn");
    SCOPED_TRACE(fmt::format("seed {}:\n{}", seed, text));
    ir::Graph g;
    ASSERT_NO_THROW(g = ir::parse_graph(text));
    expect_same_as_unrolled(g, seed);
  }
  // The seeds cover each feature.
  EXPECT_GT(reverse, 5);
  EXPECT_GT(carried, 5);
  EXPECT_GT(inner_slice, 5);
  EXPECT_GT(inner_stack, 5);
  EXPECT_GT(matmul, 5);
}

}  // namespace
}  // namespace solar::exec
