// Tests of the cache-aware SOL level (cache_aware.h): on-chip capacity, the level's formula,
// its invariants on every example and device, the per-op split and the ski-slope samples.
#include "solar/bound/cache_aware.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/hw/database.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"
#include "solar/util/errors.h"
#include "testing/fixtures.h"

namespace solar::bound {
namespace {

using ir::DType;
using tiling::TrafficMode;
using ::testing::HasSubstr;

constexpr double kMiB = 1024.0 * 1024.0;

// Tensor bf16 1e15 FLOP/s, vector f32 1e14, DRAM 1e12 B/s, and an L2 of `l2_bytes`.
hw::Device synthetic(std::optional<double> l2_bytes) {
  return testing::DeviceBuilder()
      .tensor(DType::BF16, 1e15)
      .vector(DType::F32, 1e14)
      .vector(DType::BF16, 1e14)
      .special(1e12)
      .dram(1e12)
      .memory(hw::MemoryLevel::L2, l2_bytes, std::nullopt)
      .build();
}

ir::Graph gemm_graph(int n) {
  return ir::parse_graph(fmt::format(R"(
    a = bf16[{0},{0}] input
    b = bf16[{0},{0}] weight
    c = bf16[{0},{0}]{{output}} einsum "mk,kn->mn" (a, b))",
                                     n));
}

struct Analysis {
  ir::Graph g;
  cost::GraphCost cost;
  tiling::GraphTrafficModel model;
  explicit Analysis(ir::Graph graph)
      : g(std::move(graph)), cost(cost::graph_cost(g)), model(g, cost) {}
  CacheAwareBound level(const hw::Device& d, TrafficMode mode,
                        CacheState state = CacheState::Cold) const {
    DeviceBounds b = compute_bounds(g, cost, d, Options{MathPolicy::PytorchDefault, state});
    return cache_aware_bound(g, cost, d, b, model, mode);
  }
};

TEST(OnChipCapacity, H100SumsL2SharedMemoryAndRegisters) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  OnChipCapacity c = on_chip_capacity(db.get("H100_SXM"), TrafficMode::Provable);
  ASSERT_TRUE(c.bytes.has_value());
  // 50 MB L2 + 228 KiB shared memory and 256 KiB registers on each of 132 SMs.
  EXPECT_EQ(*c.bytes, Count(50'000'000 + 228 * 1024 * 132 + 256 * 1024 * 132));
  ASSERT_EQ(c.levels.size(), 3u);
  EXPECT_EQ(c.levels[0].level, hw::MemoryLevel::L2);
  EXPECT_TRUE(c.unpublished.empty());
}

TEST(OnChipCapacity, EveryDeviceOfTheDatabaseHasOneOrAReason) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  for (const std::string& id : db.ids()) {
    if (id == "host") continue;
    OnChipCapacity c = on_chip_capacity(db.get(id), TrafficMode::Attainable);
    EXPECT_TRUE(c.bytes.has_value() != !c.reason.empty()) << id;
  }
}

TEST(OnChipCapacity, NoPublishedCapacityIsRefusedWithAReason) {
  hw::Device d = testing::DeviceBuilder().tensor(DType::BF16, 1e15).dram(1e12).build();
  OnChipCapacity c = on_chip_capacity(d, TrafficMode::Attainable);
  EXPECT_FALSE(c.bytes.has_value());
  EXPECT_THAT(c.reason, HasSubstr("publishes no on-chip memory capacity"));

  Analysis a(gemm_graph(256));
  CacheAwareBound cb = a.level(d, TrafficMode::Attainable);
  EXPECT_FALSE(cb.available);
  EXPECT_THAT(cb.reason, HasSubstr("no cache-aware level"));
  EXPECT_EQ(cb.seconds, 0);  // never a default number: the level is absent
}

TEST(OnChipCapacity, AnUnpublishedLevelRefusesOnlyTheProvableMode) {
  hw::Device d = testing::DeviceBuilder()
                     .tensor(DType::BF16, 1e15)
                     .dram(1e12)
                     .memory(hw::MemoryLevel::L2, 4e6, std::nullopt)
                     .memory(hw::MemoryLevel::Smem, std::nullopt, std::nullopt)
                     .build();
  OnChipCapacity att = on_chip_capacity(d, TrafficMode::Attainable);
  ASSERT_TRUE(att.bytes.has_value());
  EXPECT_EQ(*att.bytes, Count(4'000'000));
  EXPECT_EQ(att.unpublished, std::vector<hw::MemoryLevel>{hw::MemoryLevel::Smem});
  OnChipCapacity prov = on_chip_capacity(d, TrafficMode::Provable);
  EXPECT_FALSE(prov.bytes.has_value());
  EXPECT_THAT(prov.reason, HasSubstr("smem"));
}

TEST(CacheAware, GemmAtLargeCapacityIsTheFusedLevel) {
  Analysis a(gemm_graph(4096));
  hw::Device d = synthetic(50 * kMiB);
  CacheAwareBound cb = a.level(d, TrafficMode::Attainable);
  ASSERT_TRUE(cb.available) << cb.reason;
  // 50 MiB holds a whole bf16 operand plus a row and a column (4096^2 + 2*4096 words): the
  // curve reaches the compulsory traffic, A and B read once and C written once.
  EXPECT_EQ(cb.traffic_bytes, Count(3ull * 4096 * 4096 * 2));
  EXPECT_DOUBLE_EQ(cb.seconds, 2.0 * 4096 * 4096 * 4096 / 1e15);  // compute-bound
  EXPECT_EQ(cb.bottleneck, "tensor_core.bf16");
  ASSERT_TRUE(cb.tiling_gap.has_value());
  EXPECT_DOUBLE_EQ(*cb.tiling_gap, 1.0);
  EXPECT_DOUBLE_EQ(*cb.fusion_gap, 1.0);
  EXPECT_EQ(cb.mode, TrafficMode::Attainable);
  EXPECT_TRUE(cb.ops_at_compulsory);
  ASSERT_EQ(cb.op_share.size(), 1u);
  EXPECT_DOUBLE_EQ(cb.op_share[0], 1.0);
}

TEST(CacheAware, TwoFourGemmKeepsTheFusedLevelsComputeTerm) {
  // The level changes only the traffic: a 2:4 GEMM's compute term is the fused level's, at
  // the 2:4 sparse peak (2x dense here), in both modes.
  Analysis a(ir::parse_graph(R"(
    a = bf16[4096,4096] input
    b = bf16[4096,4096]{sparsity="2:4"} weight
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, b))"));
  hw::Device d = synthetic(50 * kMiB);
  d.units[0].sparse_2_4_peak[DType::BF16] = testing::DeviceBuilder::sourced(2e15);
  DeviceBounds b = compute_bounds(a.g, a.cost, d, {});
  for (TrafficMode mode : {TrafficMode::Attainable, TrafficMode::Provable}) {
    CacheAwareBound cb = cache_aware_bound(a.g, a.cost, d, b, a.model, mode);
    ASSERT_TRUE(cb.available) << cb.reason;
    auto seconds_of = [](const std::vector<Term>& terms) {
      for (const Term& t : terms)
        if (t.resource == "tensor_core.bf16.2:4") return t.seconds;
      return -1.0;
    };
    EXPECT_EQ(seconds_of(cb.terms), seconds_of(b.fused.terms));
    EXPECT_DOUBLE_EQ(seconds_of(cb.terms), 2.0 * 4096 * 4096 * 4096 / 2e15);
    // The traffic moves b compressed (half its values, 16 + 2 bits each), as the fused
    // level's compulsory bytes do: at 50 MiB everything fits and Q(S) is exactly those.
    constexpr std::uint64_t N = 4096;
    EXPECT_EQ(cb.traffic_bytes, Count(2 * N * N + N * N / 2 * (16 + 2) / 8 + 2 * N * N));
    EXPECT_EQ(cb.traffic_bytes, a.cost.compulsory_bytes());
  }
}

TEST(CacheAware, GemmAtSmallCapacityIsBoundByItsCurve) {
  Analysis a(gemm_graph(4096));
  hw::Device d = synthetic(1 * kMiB);
  CacheAwareBound cb = a.level(d, TrafficMode::Attainable);
  ASSERT_TRUE(cb.available) << cb.reason;
  // One op: the graph's traffic is the op's own ski-slope at S = 1 MiB, far above the
  // compulsory 3*4096^2*2 bytes (about MN + 2MNK/sqrt(S) words).
  std::optional<Count> q = a.model.op_curve(ir::OpId{0})->traffic_at(Count(1024 * 1024));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(cb.traffic_bytes, *q);
  EXPECT_GT(cb.traffic_bytes, Count(3ull * 4096 * 4096 * 2));
  EXPECT_DOUBLE_EQ(cb.seconds, std::max(2.0 * 4096 * 4096 * 4096 / 1e15, q->to_double() / 1e12));
  EXPECT_EQ(cb.bottleneck, "dram");
  EXPECT_GT(*cb.tiling_gap, 1.0);
  EXPECT_FALSE(cb.ops_at_compulsory);

  CacheAwareBound prov = a.level(d, TrafficMode::Provable);
  ASSERT_TRUE(prov.available);
  EXPECT_EQ(prov.mode, TrafficMode::Provable);
  EXPECT_LE(prov.traffic_bytes, cb.traffic_bytes);
  EXPECT_GE(prov.traffic_bytes, Count(3ull * 4096 * 4096 * 2));
  EXPECT_LE(prov.seconds, cb.seconds);
}

TEST(CacheAware, WarmCacheStateIsRefused) {
  Analysis a(gemm_graph(256));
  CacheAwareBound cb = a.level(synthetic(50 * kMiB), TrafficMode::Attainable, CacheState::Warm);
  EXPECT_FALSE(cb.available);
  EXPECT_THAT(cb.reason, HasSubstr("warm"));
}

TEST(CacheAware, MissingDramBandwidthLeavesTheMemoryTermOut) {
  hw::Device d = synthetic(1 * kMiB);
  for (hw::MemorySpec& m : d.memory)
    if (m.level == hw::MemoryLevel::Dram) m.bandwidth.reset();
  Analysis a(gemm_graph(1024));
  CacheAwareBound cb = a.level(d, TrafficMode::Attainable);
  ASSERT_TRUE(cb.available);
  EXPECT_DOUBLE_EQ(cb.seconds, 2.0 * 1024 * 1024 * 1024 / 1e15);
  ASSERT_FALSE(cb.unknown.empty());
  EXPECT_THAT(cb.unknown.back(), HasSubstr("publishes no DRAM bandwidth"));
}

std::vector<std::string> example_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(SOLAR_SOURCE_DIR) + "/examples"))
    if (e.path().extension() == ".solar") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The invariants of docs/bounds.md on every example graph and every device of the database.
TEST(CacheAware, InvariantsOnEveryExampleAndDevice) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  std::vector<std::string> files = example_files();
  ASSERT_GE(files.size(), 3u);
  for (const std::string& file : files) {
    Analysis a(ir::load_graph_file(file));
    for (const std::string& id : db.ids()) {
      if (id == "host") continue;
      const hw::Device& d = db.get(id);
      DeviceBounds b = compute_bounds(a.g, a.cost, d, Options{});
      CacheAwareBound att = cache_aware_bound(a.g, a.cost, d, b, a.model, TrafficMode::Attainable);
      CacheAwareBound prov = cache_aware_bound(a.g, a.cost, d, b, a.model, TrafficMode::Provable);
      SCOPED_TRACE(file + " on " + id);
      ASSERT_TRUE(att.available) << att.reason;
      EXPECT_LE(b.fused.seconds, att.seconds);
      EXPECT_GE(att.traffic_bytes, a.cost.compulsory_bytes());
      ASSERT_TRUE(att.no_fusion_seconds.has_value());
      EXPECT_LE(att.seconds, *att.no_fusion_seconds);
      EXPECT_LE(att.traffic_bytes, *att.no_fusion_traffic_bytes);
      if (att.ops_at_compulsory) {
        EXPECT_LE(att.seconds, b.unfused.seconds);
      }
      if (prov.available) {
        EXPECT_LE(b.fused.seconds, prov.seconds);
        EXPECT_LE(prov.seconds, att.seconds);
        EXPECT_LE(prov.traffic_bytes, att.traffic_bytes);
      }
      if (!att.op_share.empty()) {
        double sum = 0;
        for (double s : att.op_share) sum += s;
        EXPECT_NEAR(sum, 1.0, 1e-9) << att.share_basis;
      }
    }
  }
}

TEST(SkiSlope, SamplesAreLogSpacedMonotoneAndAboveCompulsory) {
  Analysis a(ir::load_graph_file(std::string(SOLAR_SOURCE_DIR) + "/examples/transformer_block.solar"));
  SkiSlope s = ski_slope(a.g, a.cost, a.model, {Count(50'000'000)}, 32, 5);
  ASSERT_EQ(s.capacities.size(), 32u);
  EXPECT_EQ(s.capacities.front(), Count(1024));
  // The range reaches 4x the largest device capacity given.
  EXPECT_GE(s.capacities.back(), Count(4 * 50'000'000ull - 1));
  for (std::size_t i = 0; i < s.capacities.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(s.capacities[i - 1], s.capacities[i]);
      EXPECT_LE(s.attainable[i], s.attainable[i - 1]);  // Q(S) is non-increasing
    }
    EXPECT_LE(s.provable[i], s.attainable[i]);
    EXPECT_GE(s.provable[i], s.compulsory_bytes);
  }
  EXPECT_EQ(s.compulsory_bytes, a.cost.compulsory_bytes());
  ASSERT_LE(s.heaviest.size(), 5u);
  ASSERT_FALSE(s.heaviest.empty());
  for (std::size_t i = 1; i < s.heaviest.size(); ++i)
    EXPECT_GE(s.heaviest[i - 1].points.front().traffic_bytes,
              s.heaviest[i].points.front().traffic_bytes);
}

TEST(SkiSlope, TooFewPointsIsABadArgument) {
  Analysis a(gemm_graph(64));
  try {
    ski_slope(a.g, a.cost, a.model, {}, 1);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_THAT(e.message(), HasSubstr("at least 2"));
  }
}


// ---- links: a collective is a fusion boundary, its link time a term of the level ----

TEST(CacheAwareLinks, LinkTermsJoinTheLevel) {
  // h = x @ w, then an all-reduce of h over 8 ranks, then a relu: the all-reduce's input and
  // result stay in DRAM (written by the matmul, read by the relu), so Q(S) holds them.
  constexpr double M = 256, K = 256, N = 256, n = 8, kLink = 1e9;
  Analysis a(ir::parse_graph(R"(
    x = bf16[256,256] input
    w = bf16[256,256] weight
    h = bf16[256,256] einsum "mk,kn->mn" (x, w)
    s = bf16[256,256] collective all_reduce sum {size=8} (h)
    y = bf16[256,256]{output} einsum [m=256,n=256] none relu($0) (s[m,n]) -> [m,n])"));
  hw::Device d = synthetic(64 * kMiB);
  hw::System sys;
  sys.id = "SYN8";
  sys.device = d.id;
  sys.scale_up.devices = 8;
  sys.scale_up.link.bandwidth = hw::Sourced{kLink, "spec", "V", ""};
  DeviceBounds b = compute_bounds(a.g, a.cost, d, Options{}, &sys);
  CacheAwareBound c = cache_aware_bound(a.g, a.cost, d, b, a.model, TrafficMode::Attainable);
  ASSERT_TRUE(c.available);
  const double S = 2 * M * N;
  // The boundary: at least the collective's own bytes (read h, write s) and the graph's
  // inputs and output move through DRAM, whatever S is.
  EXPECT_GE(c.traffic_bytes.to_double(), 2 * (M * K + K * N) + 2 * S + 2 * M * N);
  const double link = 2 * (n - 1) / n * S / kLink;  // ring all-reduce
  const double dram = c.traffic_bytes.to_double() / 1e12;
  const double compute = 2 * M * N * K / 1e15;
  const double vector = ((n - 1) / n * M * N + M * N) / 1e14;  // the reduction and the relu
  EXPECT_DOUBLE_EQ(c.seconds, std::max({compute, dram, link, vector}));
  EXPECT_EQ(c.bottleneck, "scale_up");
  ASSERT_TRUE(c.seconds_no_overlap.has_value());
  double local = 0;
  for (const Term& t : c.terms)
    if (!t.link) local = std::max(local, t.seconds);
  EXPECT_DOUBLE_EQ(*c.seconds_no_overlap, local + link);
  // The bottleneck's split: the all-reduce carries the whole link term.
  ASSERT_FALSE(c.op_share.empty());
  EXPECT_DOUBLE_EQ(c.op_share[1], 1.0);
}

TEST(CacheAwareLinks, UnknownLinkTimeCarriesOver) {
  Analysis a(ir::parse_graph(R"(
    x = f32[64] input
    y = f32[128]{output} collective all_gather {size=2, axis=0} (x))"));
  CacheAwareBound c = a.level(synthetic(64 * kMiB), TrafficMode::Attainable);
  ASSERT_TRUE(c.available);
  ASSERT_EQ(c.unknown.size(), 1u);
  EXPECT_THAT(c.unknown[0], HasSubstr("512 bytes of all_gather payload"));  // 2 x 64 f32
  EXPECT_FALSE(c.seconds_no_overlap.has_value());
}

}  // namespace
}  // namespace solar::bound
