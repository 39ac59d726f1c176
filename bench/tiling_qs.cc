// Times the full attainable traffic curve Q(S) of a 4096^3 GEMM (target: under 20 ms per
// curve, bench/README.md) in ceil and divisor tile modes, and prints the mappings evaluated per
// second and a few points of each curve (bytes, fp32).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "solar/tiling/curve.h"
#include "solar/tiling/problem.h"

namespace {

void run(const char* label, solar::tiling::TileMode mode) {
  using namespace solar::tiling;
  const TilingProblem p = gemm_problem(4096, 4096, 4096, solar::ir::DType::F32);
  CurveOptions opt;
  opt.tiles = mode;
  CurveResult r;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    r = attainable_curve(p, opt);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  std::printf("%-8s gemm 4096^3: %.3f ms per curve (best of 5), %llu mappings, %.3g mappings/s, "
              "%zu Pareto points, exhaustive=%d\n",
              label, best * 1e3, static_cast<unsigned long long>(r.evaluated),
              static_cast<double>(r.evaluated) / best, r.curve.points().size(), r.exhaustive);
  for (double mib : {2.0, 24.0, 40.0, 50.0}) {
    const solar::Count s(static_cast<std::uint64_t>(mib * 1024 * 1024));
    std::printf("  Q(%4.0f MiB) = %.1f MiB\n", mib,
                r.curve.traffic_at(s)->to_double() / (1024.0 * 1024.0));
  }
}

}  // namespace

int main() {
  run("ceil", solar::tiling::TileMode::Ceil);
  run("divisor", solar::tiling::TileMode::Divisor);
  return 0;
}
