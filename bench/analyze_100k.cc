// bench_analyze_100k: times each phase of analyzing a synthetic graph of 100,000 ops (a
// long stack of the decoder block of examples/transformer_block.solar, as text), and
// prints seconds per phase, the total, ops/s and the peak RSS.
//
//   bench_analyze_100k [--ops N] [--devices ID,ID] [--max-seconds S]
//
// Target (bench/README.md): parse + verify + cost + bounds on 2 devices under 1 s.
// --max-seconds makes the run fail (exit 1) when that total exceeds S.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "solar/bound/sol.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/database.h"
#include "solar/ir/text.h"
#include "solar/ir/verify.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"

namespace {

using namespace solar;
using Clock = std::chrono::steady_clock;

// One decoder block (examples/transformer_block.solar) with its weights; {p} prefixes
// every name of layer p, {x} is the layer's input. 30 ops.
constexpr int kOpsPerLayer = 30;
constexpr const char* kLayer = R"(
{p}ln1_gamma = bf16[1024] weight
{p}ln1_beta = bf16[1024] weight
{p}wq = bf16[1024,16,64] weight
{p}wk = bf16[1024,16,64] weight
{p}wv = bf16[1024,16,64] weight
{p}wo = bf16[16,64,1024] weight
{p}ln2_gamma = bf16[1024] weight
{p}ln2_beta = bf16[1024] weight
{p}w1 = bf16[1024,4096] weight
{p}w2 = bf16[4096,1024] weight
{p}ln1_sum = f32[4,1024] einsum "bsd->bs" ({x})
{p}ln1_mean = f32[4,1024] einsum [b=4,s=1024] none div($0,1024) ({p}ln1_sum[b,s]) -> [b,s]
{p}ln1_xc = f32[4,1024,1024] einsum [b=4,s=1024,d=1024] none sub($0,$1) ({x}[b,s,d], {p}ln1_mean[b,s]) -> [b,s,d]
{p}ln1_ssq = f32[4,1024] einsum [b=4,s=1024,d=1024] sum square($0) ({p}ln1_xc[b,s,d]) -> [b,s]
{p}ln1_rstd = f32[4,1024] einsum [b=4,s=1024] none rsqrt(add(div($0,1024),1e-05)) ({p}ln1_ssq[b,s]) -> [b,s]
{p}ln1_norm = f32[4,1024,1024] einsum [b=4,s=1024,d=1024] none mul($0,$1) ({p}ln1_xc[b,s,d], {p}ln1_rstd[b,s]) -> [b,s,d]
{p}ln1_out = bf16[4,1024,1024] einsum [b=4,s=1024,d=1024] none add(mul($0,$1),$2) ({p}ln1_norm[b,s,d], {p}ln1_gamma[d], {p}ln1_beta[d]) -> [b,s,d]
{p}q = bf16[4,16,1024,64] einsum "bsd,dhe->bhse" ({p}ln1_out, {p}wq)
{p}k = bf16[4,16,1024,64] einsum "bsd,dhe->bhse" ({p}ln1_out, {p}wk)
{p}v = bf16[4,16,1024,64] einsum "bsd,dhe->bhse" ({p}ln1_out, {p}wv)
{p}scores = f32[4,16,1024,1024] einsum [b=4,h=16,i=1024,j=1024,e=64] sum mul($0,$1) ({p}q[b,h,i,e], {p}k[b,h,j,e]) -> [b,h,i,j] where i >= j
{p}scaled = f32[4,16,1024,1024] einsum [b=4,h=16,i=1024,j=1024] none mul($0,0.125) ({p}scores[b,h,i,j]) -> [b,h,i,j] where i >= j
{p}sm_max = f32[4,16,1024] einsum [b=4,h=16,i=1024,j=1024] max $0 ({p}scaled[b,h,i,j]) -> [b,h,i] where i >= j
{p}sm_exp = f32[4,16,1024,1024] einsum [b=4,h=16,i=1024,j=1024] none exp(sub($0,$1)) ({p}scaled[b,h,i,j], {p}sm_max[b,h,i]) -> [b,h,i,j] where i >= j
{p}sm_sum = f32[4,16,1024] einsum [b=4,h=16,i=1024,j=1024] sum $0 ({p}sm_exp[b,h,i,j]) -> [b,h,i] where i >= j
{p}probs = bf16[4,16,1024,1024] einsum [b=4,h=16,i=1024,j=1024] none div($0,$1) ({p}sm_exp[b,h,i,j], {p}sm_sum[b,h,i]) -> [b,h,i,j] where i >= j
{p}ctx = bf16[4,16,1024,64] einsum [b=4,h=16,i=1024,j=1024,e=64] sum mul($0,$1) ({p}probs[b,h,i,j], {p}v[b,h,j,e]) -> [b,h,i,e] where i >= j
{p}attn = bf16[4,1024,1024] einsum "bhse,hed->bsd" ({p}ctx, {p}wo)
{p}h1 = bf16[4,1024,1024] einsum [b=4,s=1024,d=1024] none add($0,$1) ({x}[b,s,d], {p}attn[b,s,d]) -> [b,s,d]
{p}ln2_sum = f32[4,1024] einsum "bsd->bs" ({p}h1)
{p}ln2_mean = f32[4,1024] einsum [b=4,s=1024] none div($0,1024) ({p}ln2_sum[b,s]) -> [b,s]
{p}ln2_xc = f32[4,1024,1024] einsum [b=4,s=1024,d=1024] none sub($0,$1) ({p}h1[b,s,d], {p}ln2_mean[b,s]) -> [b,s,d]
{p}ln2_ssq = f32[4,1024] einsum [b=4,s=1024,d=1024] sum square($0) ({p}ln2_xc[b,s,d]) -> [b,s]
{p}ln2_rstd = f32[4,1024] einsum [b=4,s=1024] none rsqrt(add(div($0,1024),1e-05)) ({p}ln2_ssq[b,s]) -> [b,s]
{p}ln2_norm = f32[4,1024,1024] einsum [b=4,s=1024,d=1024] none mul($0,$1) ({p}ln2_xc[b,s,d], {p}ln2_rstd[b,s]) -> [b,s,d]
{p}ln2_out = bf16[4,1024,1024] einsum [b=4,s=1024,d=1024] none add(mul($0,$1),$2) ({p}ln2_norm[b,s,d], {p}ln2_gamma[d], {p}ln2_beta[d]) -> [b,s,d]
{p}up = bf16[4,1024,4096] einsum "bsd,df->bsf" ({p}ln2_out, {p}w1)
{p}act = bf16[4,1024,4096] einsum [b=4,s=1024,f=4096] none mul(mul($0,0.5),add(erf(mul($0,0.7071067811865476)),1)) ({p}up[b,s,f]) -> [b,s,f]
{p}down = bf16[4,1024,1024] einsum "bsf,fd->bsd" ({p}act, {p}w2)
{p}out = bf16[4,1024,1024]{out} einsum [b=4,s=1024,d=1024] none add($0,$1) ({p}h1[b,s,d], {p}down[b,s,d]) -> [b,s,d]
)";

// The text of a graph of exactly `num_ops` ops: whole decoder blocks, then residual adds.
std::string synthetic_graph(int num_ops) {
  std::string text = "graph stack\nx = bf16[4,1024,1024] input\n";
  int layers = num_ops / kOpsPerLayer;
  int tail = num_ops % kOpsPerLayer;
  std::string x = "x";
  for (int l = 0; l < layers; ++l) {
    std::string p = fmt::format("l{}_", l);
    bool last = l == layers - 1 && tail == 0;
    text += fmt::format(fmt::runtime(kLayer), fmt::arg("p", p), fmt::arg("x", x),
                        fmt::arg("out", last ? "{output}" : ""));
    x = p + "out";
  }
  for (int t = 0; t < tail; ++t) {
    std::string y = fmt::format("tail{}", t);
    text += fmt::format(
        "{} = bf16[4,1024,1024]{} einsum [b=4,s=1024,d=1024] none add($0,$1) ({}[b,s,d], "
        "x[b,s,d]) -> [b,s,d]\n",
        y, t == tail - 1 ? "{output}" : "", x);
    x = y;
  }
  return text;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: kilobytes
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int run(int argc, char** argv) {
  int num_ops = 100000;
  std::vector<std::string> device_ids = {"H100_SXM", "B200"};
  double max_seconds = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--ops" && has_value) {
      num_ops = std::atoi(argv[++i]);
    } else if (a == "--devices" && has_value) {
      device_ids = split(argv[++i]);
    } else if (a == "--max-seconds" && has_value) {
      max_seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_analyze_100k [--ops N] [--devices ID,ID] [--max-seconds S]\n");
      return 2;
    }
  }
  if (num_ops < 1) {
    std::fprintf(stderr, "bench_analyze_100k: --ops must be at least 1\n");
    return 2;
  }

  auto t = Clock::now();
  std::string text = synthetic_graph(num_ops);
  double t_generate = seconds_since(t);

  hw::DeviceDb db = hw::DeviceDb::load_default();
  std::vector<const hw::Device*> devices;
  for (const std::string& id : device_ids) devices.push_back(&db.get(id));

  t = Clock::now();
  ir::Graph g = ir::parse_graph(text, "<synthetic>");  // verifies
  double t_parse = seconds_since(t);
  if (static_cast<int>(g.ops().size()) != num_ops)
    throw InternalError(fmt::format("generated {} ops, expected {}", g.ops().size(), num_ops),
                        __FILE__, __LINE__);

  t = Clock::now();
  ir::verify(g);  // again, alone: the share of parse_graph that verification takes
  double t_verify = seconds_since(t);

  t = Clock::now();
  cost::GraphCost cost = cost::graph_cost(g);
  double t_cost = seconds_since(t);

  bound::Options options;
  std::vector<double> t_bounds;
  report::Report r{&g, cost, {}, {}, options};
  for (const hw::Device* d : devices) {
    t = Clock::now();
    r.devices.push_back(bound::compute_bounds(g, r.cost, *d, options));
    t_bounds.push_back(seconds_since(t));
  }

  t = Clock::now();
  std::string json = report::to_json(r).dump();
  double t_json = seconds_since(t);

  double t_bounds_all = 0;
  for (double b : t_bounds) t_bounds_all += b;
  double total = t_parse + t_cost + t_bounds_all;

  std::printf("graph: %d ops, %zu tensors, %.1f MB of text (generated in %.3f s)\n", num_ops,
              g.tensors().size(), static_cast<double>(text.size()) / 1e6, t_generate);
  std::printf("%-34s %9.3f s\n", "parse (incl. verify)", t_parse);
  std::printf("%-34s %9.3f s   (second run, alone)\n", "  verify", t_verify);
  std::printf("%-34s %9.3f s\n", "cost", t_cost);
  for (std::size_t i = 0; i < devices.size(); ++i)
    std::printf("%-34s %9.3f s\n", fmt::format("bounds {}", devices[i]->id).c_str(), t_bounds[i]);
  std::printf("%-34s %9.3f s   target < 1 s\n", "total parse+verify+cost+bounds", total);
  std::printf("%-34s %9.0f ops/s\n", "throughput", num_ops / total);
  std::printf("%-34s %9.3f s   (%.1f MB, not in the total)\n", "to_json", t_json,
              static_cast<double>(json.size()) / 1e6);
  std::printf("%-34s %9.1f MiB\n", "peak RSS", peak_rss_mib());
  if (max_seconds > 0 && total > max_seconds) {
    std::printf("FAIL: total %.3f s exceeds --max-seconds %.3f\n", total, max_seconds);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_analyze_100k: error: %s\n", e.what());
    return 1;
  }
}
