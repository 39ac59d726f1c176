// bench_exec_kernels: times the executor's einsum kernel (run_einsum) on the workloads of
// bench/README.md written as decomposed einsum graphs (the same text as bench/exec_vs_torch.py):
// a 2048^3 fp32 matmul, ResNet 3x3 conv layers, softmax and layer norm over 4096x4096 f32.
// Prints, per workload, the minimum and median milliseconds over the trials and the rate, and
// per op its path, its time and its rate (GFLOP/s for contractions, GB/s of compulsory traffic
// otherwise). Kernel time only: output buffers are allocated before the timed call and reused
// across trials; `--fresh` allocates each output anew (Buffer::uninitialized, after freeing the
// previous one) as an executor does, still outside the timed call.
//
//   bench_exec_kernels [--only matmul,conv,...] [--trials N] [--threads T] [--fresh]
//                      [--graph FILE]   (also time an einsum-only graph in the text form)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <omp.h>

#include "solar/exec/buffer.h"
#include "solar/exec/einsum_path.h"
#include "solar/exec/kernels.h"
#include "solar/ir/text.h"

namespace {

using solar::exec::Buffer;

struct Workload {
  std::string name, what, text;
};

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  w.push_back({"matmul", "2048^3 fp32 matmul",
               "a = f32[2048,2048] input\nb = f32[2048,2048] input\n"
               "c = f32[2048,2048]{output} einsum \"mk,kn->mn\" (a, b)\n"});
  auto conv = [](int n, int c, int hw) {
    return fmt::format(
        "x = f32[{0},{1},{2},{2}] input\nw = f32[{1},{1},3,3] weight\n"
        "y = f32[{0},{1},{2},{2}]{{output}} einsum [n={0},k={1},p={2},q={2},c={1},r=3,s=3] "
        "sum mul($0,$1) (x[n,c,p+r-1,q+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q]\n",
        n, c, hw);
  };
  w.push_back({"conv64", "ResNet 3x3 conv N=8 C=K=64 56x56 pad 1", conv(8, 64, 56)});
  w.push_back({"conv", "ResNet 3x3 conv N=8 C=K=128 56x56 pad 1 (bench/exec_vs_torch.py)", conv(8, 128, 56)});
  w.push_back({"conv256", "ResNet 3x3 conv N=8 C=K=256 14x14 pad 1", conv(8, 256, 14)});
  w.push_back({"softmax", "softmax over 4096x4096 f32 (max, exp, sum, divide)",
               "x = f32[4096,4096] input\n"
               "mx = f32[4096] einsum [i=4096,j=4096] max $0 (x[i,j]) -> [i]\n"
               "e = f32[4096,4096] einsum [i=4096,j=4096] none exp(sub($0,$1)) (x[i,j], mx[i]) -> [i,j]\n"
               "sm = f32[4096] einsum [i=4096,j=4096] sum $0 (e[i,j]) -> [i]\n"
               "y = f32[4096,4096]{output} einsum [i=4096,j=4096] none div($0,$1) (e[i,j], sm[i]) -> [i,j]\n"});
  w.push_back({"layernorm", "layer norm over 4096x4096 f32 (mean, center, variance, normalize+affine)",
               "x = f32[4096,4096] input\ng = f32[4096] weight\nb = f32[4096] weight\n"
               "sum = f32[4096] einsum \"rd->r\" (x)\n"
               "mean = f32[4096] einsum [r=4096] none div($0,4096) (sum[r]) -> [r]\n"
               "xc = f32[4096,4096] einsum [r=4096,d=4096] none sub($0,$1) (x[r,d], mean[r]) -> [r,d]\n"
               "ssq = f32[4096] einsum [r=4096,d=4096] sum square($0) (xc[r,d]) -> [r]\n"
               "rstd = f32[4096] einsum [r=4096] none rsqrt(add(div($0,4096),1e-05)) (ssq[r]) -> [r]\n"
               "y = f32[4096,4096]{output} einsum [r=4096,d=4096] none add(mul(mul($0,$1),$2),$3) "
               "(xc[r,d], rstd[r], g[d], b[d]) -> [r,d]\n"});
  return w;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 2 * MACs for contractions (mul+sum), else 0.
double flops_of(const solar::ir::EinsumOp& e) {
  if (e.reduce != solar::ir::Reduce::Sum || !e.combine.is_product_of_two_operands()) return 0;
  double p = 2;
  for (const auto& d : e.indices) p *= static_cast<double>(d.extent);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  int trials = 5, threads = 0;
  bool fresh = false;
  std::vector<Workload> extra;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--graph" && i + 1 < argc) {
      const std::string path = argv[++i];
      std::FILE* f = std::fopen(path.c_str(), "rb");
      if (f == nullptr) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 2;
      }
      std::string text;
      char buf[4096];
      for (std::size_t r; (r = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, r);
      std::fclose(f);
      extra.push_back({path.substr(path.find_last_of('/') + 1), path, text});
      if (only.empty()) only = extra.back().name;
      else only += "," + extra.back().name;
    } else if (a == "--only" && i + 1 < argc) {
      only = only.empty() ? std::string(argv[++i]) : only + "," + argv[++i];
    }
    else if (a == "--trials" && i + 1 < argc) trials = std::max(1, std::atoi(argv[++i]));
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--fresh") fresh = true;
    else {
      std::fprintf(stderr, "usage: %s [--only a,b] [--trials N] [--threads T] [--fresh] [--graph FILE]\n", argv[0]);
      return 2;
    }
  }
  solar::exec::ExecContext ctx;
  ctx.threads = threads;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1);
  fmt::print("einsum kernel timings, {} trials (min / median ms), {} threads{}\n\n", trials,
             threads > 0 ? std::to_string(threads) : std::string("all"),
             fresh ? ", fresh output buffers" : "");
  // The machine's memory speed right now, for scale: a read-only pass (sum) and a
  // read+write pass (scale) over 64 MiB with plain OpenMP loops.
  {
    const std::int64_t n = std::int64_t{4096} * 4096;
    Buffer x = Buffer::zeros(solar::ir::DType::F32, {n}), y = Buffer::zeros(solar::ir::DType::F32, {n});
    float* xp = x.data<float>();
    float* yp = y.data<float>();
    for (std::int64_t i = 0; i < n; ++i) xp[i] = 1.0f, yp[i] = 0.0f;
    const int t = threads > 0 ? threads : omp_get_max_threads();
    std::vector<double> rs, ws;
    float sink = 0;
    for (int trial = 0; trial <= trials; ++trial) {
      auto t0 = std::chrono::steady_clock::now();
      float total = 0;
#pragma omp parallel for simd reduction(+ : total) num_threads(t) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) total += xp[i];
      const double r = seconds_since(t0);
      sink += total;
      t0 = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(t) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) yp[i] = xp[i] * 2.0f;
      const double w = seconds_since(t0);
      if (trial > 0) rs.push_back(r), ws.push_back(w);
    }
    const double r = *std::min_element(rs.begin(), rs.end()), w = *std::min_element(ws.begin(), ws.end());
    fmt::print("memory: read 64 MiB {:.2f} ms ({:.1f} GB/s), read+write 64 MiB {:.2f} ms ({:.1f} GB/s){}\n\n",
               r * 1e3, n * 4 / r / 1e9, w * 1e3, n * 8 / w / 1e9, sink < 0 ? " " : "");
  }
  std::vector<Workload> all = workloads();
  all.insert(all.end(), extra.begin(), extra.end());
  for (const Workload& wl : all) {
    if (!only.empty() && ("," + only + ",").find("," + wl.name + ",") == std::string::npos) continue;
    const solar::ir::Graph g = solar::ir::parse_graph(wl.text, wl.name);
    std::map<std::uint32_t, Buffer> values;
    for (const auto& t : g.tensors()) {
      if (!solar::ir::is_graph_source(t.role)) continue;
      Buffer b = Buffer::zeros(t.dtype, t.shape);
      for (std::int64_t i = 0; i < b.num_elements(); ++i) b.data<float>()[i] = normal(rng);
      values[t.id.value] = std::move(b);
    }
    const std::size_t n_ops = g.ops().size();
    std::vector<std::vector<double>> op_times(n_ops);
    std::vector<double> totals;
    std::vector<std::string> paths(n_ops);
    for (int trial = 0; trial <= trials; ++trial) {  // trial 0 warms up
      double total = 0;
      for (std::size_t k = 0; k < n_ops; ++k) {
        const auto& op = g.ops()[k];
        const auto& out = g.tensor(op.outputs[0]);
        if (fresh || !values.count(out.id.value)) {
          values.erase(out.id.value);  // freed first, as an executor frees dead tensors
          values[out.id.value] = Buffer::uninitialized(out.dtype, out.shape);
        }
        Buffer& o = values[out.id.value];
        if (!fresh && trial == 0) std::memset(o.raw_data(), 0, o.storage_size_bytes());  // fault in
        std::vector<const Buffer*> in;
        for (auto id : op.inputs) in.push_back(&values.at(id.value));
        const auto t0 = std::chrono::steady_clock::now();
        solar::exec::run_einsum(op.einsum(), in, o, ctx);
        const double s = seconds_since(t0);
        paths[k] = std::string(solar::exec::einsum_path_name(solar::exec::last_einsum_run().path));
        if (trial > 0) op_times[k].push_back(s);
        total += s;
      }
      if (trial > 0) totals.push_back(total);
    }
    auto minmed = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return std::pair{v.front(), v[v.size() / 2]};
    };
    const auto [tmin, tmed] = minmed(totals);
    fmt::print("{:<10} {:>9.2f} {:>9.2f} ms   {}\n", wl.name, tmin * 1e3, tmed * 1e3, wl.what);
    for (std::size_t k = 0; k < n_ops; ++k) {
      const auto& op = g.ops()[k];
      const auto [omin, omed] = minmed(op_times[k]);
      const double fl = flops_of(op.einsum());
      double bytes = g.tensor(op.outputs[0]).size_bytes().to_double();
      for (auto id : op.inputs) bytes += g.tensor(id).size_bytes().to_double();
      const std::string rate = fl > 0 ? fmt::format("{:7.1f} GFLOP/s", fl / omin / 1e9)
                                      : fmt::format("{:7.1f} GB/s", bytes / omin / 1e9);
      fmt::print("  {:<8} {:<12} {:>9.2f} {:>9.2f} ms  {}\n", g.tensor(op.outputs[0]).name,
                 paths[k], omin * 1e3, omed * 1e3, rate);
    }
  }
  return 0;
}
