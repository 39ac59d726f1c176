// Times the whole-graph traffic curve Q(S) with fusion (tiling/fusion.h) on a 12-layer
// GPT-2-small-shaped transformer (sequence 1024, d_model 768, 12 heads, MLP 3072, fp32; every
// op an einsum as the frontends lower it) at 32 capacities log-spaced from 64 KiB to 1 GiB
// (target: model build + all 32 queries under 2 s), prints the mappings evaluated per second
// and the curve, and times the 4096^3 GEMM curve (target < 20 ms; as bench_tiling_qs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fmt/format.h"
#include "solar/cost/graph_cost.h"
#include "solar/ir/text.h"
#include "solar/tiling/curve.h"
#include "solar/tiling/fusion.h"

namespace {

// One pre-LN decoder block: LN1, QKV, scores, softmax (max, exp, sum, divide), AV, output
// projection, residual, LN2, FFN (GELU) and residual. `x` is the block input's name.
std::string block(int l, bool last, const std::string& x, int s, int d, int h, int f) {
  const int dh = d / h;
  const double inv_d = 1.0 / d, scale = 1.0 / std::sqrt(static_cast<double>(dh));
  auto ln = [&](const std::string& p, const std::string& in) {
    return fmt::format(
        "{p}g = f32[{d}] weight\n{p}b = f32[{d}] weight\n"
        "{p}mu = f32[{s}] einsum [s={s},c={d}] sum mul($0,{inv}) ({in}[s,c]) -> [s]\n"
        "{p}xc = f32[{s},{d}] einsum [s={s},c={d}] none sub($0,$1) ({in}[s,c], {p}mu[s]) -> [s,c]\n"
        "{p}var = f32[{s}] einsum [s={s},c={d}] sum mul(mul($0,$0),{inv}) ({p}xc[s,c]) -> [s]\n"
        "{p}rs = f32[{s}] einsum [s={s}] none rsqrt(add($0,0.00001)) ({p}var[s]) -> [s]\n"
        "{p}y = f32[{s},{d}] einsum [s={s},c={d}] none add(mul(mul($0,$1),$2),$3) "
        "({p}xc[s,c], {p}rs[s], {p}g[c], {p}b[c]) -> [s,c]\n",
        fmt::arg("p", p), fmt::arg("in", in), fmt::arg("s", s), fmt::arg("d", d),
        fmt::arg("inv", inv_d));
  };
  const std::string p = fmt::format("l{}_", l);
  std::string t = ln(p + "ln1", x);
  t += fmt::format(
      "{p}wqkv = f32[{d},{d3}] weight\n"
      "{p}qkv = f32[{s},{d3}] einsum \"sc,ce->se\" ({p}ln1y, {p}wqkv)\n"
      "{p}qkv4 = f32[{s},3,{h},{dh}] move view ({p}qkv)\n"
      "{p}sc = f32[{h},{s},{s}] einsum [h={h},i={s},j={s},e={dh}] sum mul(mul($0,$1),{scale}) "
      "({p}qkv4[i,0,h,e], {p}qkv4[j,1,h,e]) -> [h,i,j]\n"
      "{p}mx = f32[{h},{s}] einsum [h={h},i={s},j={s}] max $0 ({p}sc[h,i,j]) -> [h,i]\n"
      "{p}ex = f32[{h},{s},{s}] einsum [h={h},i={s},j={s}] none exp(sub($0,$1)) "
      "({p}sc[h,i,j], {p}mx[h,i]) -> [h,i,j]\n"
      "{p}sm = f32[{h},{s}] einsum [h={h},i={s},j={s}] sum $0 ({p}ex[h,i,j]) -> [h,i]\n"
      "{p}pr = f32[{h},{s},{s}] einsum [h={h},i={s},j={s}] none div($0,$1) "
      "({p}ex[h,i,j], {p}sm[h,i]) -> [h,i,j]\n"
      "{p}av = f32[{s},{h},{dh}] einsum [i={s},h={h},e={dh},j={s}] sum mul($0,$1) "
      "({p}pr[h,i,j], {p}qkv4[j,2,h,e]) -> [i,h,e]\n"
      "{p}avv = f32[{s},{d}] move view ({p}av)\n"
      "{p}wo = f32[{d},{d}] weight\n"
      "{p}pj = f32[{s},{d}] einsum \"sc,ce->se\" ({p}avv, {p}wo)\n"
      "{p}x2 = f32[{s},{d}] einsum [s={s},c={d}] none add($0,$1) ({x}[s,c], {p}pj[s,c]) -> [s,c]\n",
      fmt::arg("p", p), fmt::arg("x", x), fmt::arg("s", s), fmt::arg("d", d),
      fmt::arg("d3", 3 * d), fmt::arg("h", h), fmt::arg("dh", dh), fmt::arg("scale", scale));
  t += ln(p + "ln2", p + "x2");
  t += fmt::format(
      "{p}w1 = f32[{d},{f}] weight\n{p}w2 = f32[{f},{d}] weight\n"
      "{p}f1 = f32[{s},{f}] einsum \"sc,cf->sf\" ({p}ln2y, {p}w1)\n"
      "{p}ge = f32[{s},{f}] einsum [s={s},c={f}] none "
      "mul(mul($0,0.5),add(1,erf(mul($0,0.7071067811865476)))) ({p}f1[s,c]) -> [s,c]\n"
      "{p}f2 = f32[{s},{d}] einsum \"sf,fc->sc\" ({p}ge, {p}w2)\n"
      "{p}out = f32[{s},{d}]{o} einsum [s={s},c={d}] none add($0,$1) ({p}x2[s,c], {p}f2[s,c]) "
      "-> [s,c]\n",
      fmt::arg("p", p), fmt::arg("s", s), fmt::arg("d", d), fmt::arg("f", f),
      fmt::arg("o", last ? "{output}" : ""));
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace solar;
  // --check: exit 1 when a target is missed; --layers N: a deeper stack (scaling).
  bool check = false;
  int layers = 12;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) check = true;
    if (std::strcmp(argv[i], "--layers") == 0 && i + 1 < argc) layers = std::atoi(argv[++i]);
  }
  const int seq = 1024, d = 768, heads = 12, mlp = 3072;
  std::string text = fmt::format("graph gpt2_small\nx0 = f32[{},{}] input\n", seq, d);
  std::string x = "x0";
  for (int l = 0; l < layers; ++l) {
    text += block(l, l + 1 == layers, x, seq, d, heads, mlp);
    x = fmt::format("l{}_out", l);
  }
  const ir::Graph g = ir::parse_graph(text, "gpt2_small");
  const cost::GraphCost c = cost::graph_cost(g);

  const auto t0 = std::chrono::steady_clock::now();
  const tiling::GraphTrafficModel model(g, c);
  const double build_s = seconds_since(t0);
  const std::uint64_t built_evals = model.mappings_evaluated();
  std::vector<tiling::GraphTraffic> att, prov;
  const double lo = 64.0 * 1024, hi = 1024.0 * 1024 * 1024;
  std::vector<double> times;
  for (int i = 0; i < 32; ++i) {
    const double cap = lo * std::pow(hi / lo, i / 31.0);
    const auto q0 = std::chrono::steady_clock::now();
    const Count s(static_cast<std::uint64_t>(cap));
    att.push_back(model.at(s, tiling::TrafficMode::Attainable));
    times.push_back(seconds_since(q0));
    prov.push_back(model.at(s, tiling::TrafficMode::Provable));
  }
  const double total_s = seconds_since(t0);
  const std::uint64_t evals = model.mappings_evaluated();
  std::printf("gpt2-small graph: %zu ops, %zu tensors; compulsory %.1f MiB, unfused %.1f MiB\n",
              g.ops().size(), g.tensors().size(), c.compulsory_bytes().to_double() / 1048576,
              c.total.bytes().to_double() / 1048576);
  std::printf("model build %.3f s (%llu mappings); 32 capacities x (attainable + provable): "
              "total %.3f s (target < 2 s); slowest attainable query %.3f s; %llu mappings, "
              "%.3g mappings/s\n",
              build_s, static_cast<unsigned long long>(built_evals), total_s,
              *std::max_element(times.begin(), times.end()),
              static_cast<unsigned long long>(evals), static_cast<double>(evals) / total_s);
  std::printf("%14s %14s %14s %8s %8s %8s %s\n", "S (bytes)", "Q_att (MiB)", "Q_lb (MiB)",
              "groups", "fused", "tiled", "query s");
  for (std::size_t i = 0; i < att.size(); ++i) {
    int fused = 0, tiled = 0;
    for (const auto& grp : att[i].groups) {
      fused += grp.ops.size() > 1;
      tiled += grp.kind == tiling::FusionKind::Tiled;
    }
    std::printf("%14s %14.2f %14.2f %8zu %8d %8d %.4f\n", att[i].capacity_bytes.str().c_str(),
                att[i].traffic_bytes.to_double() / 1048576,
                prov[i].traffic_bytes.to_double() / 1048576, att[i].groups.size(), fused, tiled,
                times[i]);
  }

  // Segments priced once per structure (memo_segments) against each segment priced alone:
  // the 32 attainable capacities in one batched search each way, side by side, best of 3;
  // the results must be equal.
  std::vector<Count> caps;
  for (const tiling::GraphTraffic& q : att) caps.push_back(q.capacity_bytes);
  double memo_s = 1e30, alone_s = 1e30;
  bool same = true;
  for (int rep = 0; rep < 3; ++rep)
    for (bool memo : {true, false}) {
      tiling::GraphCurveOptions o;
      o.memo_segments = memo;
      const tiling::GraphTrafficModel m(g, c, o);
      const auto q0 = std::chrono::steady_clock::now();
      const std::vector<tiling::GraphTraffic> r = m.at(caps, tiling::TrafficMode::Attainable);
      (memo ? memo_s : alone_s) = std::min(memo ? memo_s : alone_s, seconds_since(q0));
      for (std::size_t i = 0; i < r.size(); ++i)
        same = same && r[i].traffic_bytes == att[i].traffic_bytes &&
               r[i].op_traffic_bytes == att[i].op_traffic_bytes;
    }
  std::printf("segmentation search, 32 capacities: segments priced once per structure %.3f s, "
              "each priced alone %.3f s (%.2fx); results %s\n",
              memo_s, alone_s, alone_s / memo_s, same ? "equal" : "DIFFER");

  // The 4096^3 GEMM full curve (ceil mode), best of 5.
  const tiling::TilingProblem p = tiling::gemm_problem(4096, 4096, 4096, ir::DType::F32);
  double best = 1e30;
  tiling::CurveResult r;
  for (int rep = 0; rep < 5; ++rep) {
    const auto g0 = std::chrono::steady_clock::now();
    r = tiling::attainable_curve(p, {});
    best = std::min(best, seconds_since(g0));
  }
  std::printf("gemm 4096^3 ceil curve: %.3f ms (target < 20 ms), %llu mappings, %zu points\n",
              best * 1e3, static_cast<unsigned long long>(r.evaluated), r.curve.points().size());
  if (check && (total_s >= 2 || best >= 0.020 || !same)) return 1;
  return 0;
}
