// Tests of the whole-graph traffic model (tiling/fusion.h): anchor E of
// docs/cache-aware.md (GPT-3 6.7B FFN), untiled and tiled fusion on small
// graphs, the provable mode, and invariants on random graphs against a brute force over
// segmentations.
#include "solar/tiling/fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>

#include "fmt/format.h"
#include "solar/ir/text.h"
#include "solar/tiling/provable.h"

namespace solar::tiling {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// A graph and its cost, kept together: the model refers to both.
struct Analyzed {
  explicit Analyzed(std::string_view text) : g(ir::parse_graph(text)), c(cost::graph_cost(g)) {}
  ir::Graph g;
  cost::GraphCost c;
};

double gib(Count c) { return c.to_double() / static_cast<double>(kGiB); }

// ---- anchor E: GPT-3 6.7B FFN, bf16, M = 32768, D = 4096, F = 16384 ----------------------

constexpr std::uint64_t M = 32768, D = 4096, F = 16384;
const char* kFfn = R"(
    x = bf16[32768,4096] input
    w1 = bf16[4096,16384] weight
    w2 = bf16[16384,4096] weight
    h = bf16[32768,16384] einsum "md,df->mf" (x, w1)
    y = bf16[32768,4096]{output} einsum "mf,fd->md" (h, w2))";
constexpr std::uint64_t kX = 2 * M * D, kW1 = 2 * D * F, kW2 = 2 * F * D, kY = 2 * M * D;

struct AnchorRow {
  std::uint64_t capacity;
  double unfused_gib;  // table column "Unfused sum" (3 digits)
  std::uint64_t tiles; // FFMT row tiles of the table's tiled-fused value; 0: weights resident
};
// Tiles: the largest power-of-two row tile p whose intermediate tile p x F (2 bytes) fits
// next to the other tiles: 32 MiB at p = 1024 (50 MiB), 64 MiB at 2048 (116 MiB), 128 MiB at
// 4096 (256 MiB); at 1 GiB both weights (256 MiB) stay resident.
const AnchorRow kAnchor[] = {
    {50 * kMiB, 4.38, M / 1024},
    {116 * kMiB, 3.38, M / 2048},
    {256 * kMiB, 2.75, M / 4096},
    {kGiB, 2.75, 0},
};

std::uint64_t ffmt_traffic(std::uint64_t tiles) {
  // Weights re-read once per row tile; x read and y written once. Resident weights: once.
  return tiles == 0 ? kX + kW1 + kW2 + kY : tiles * (kW1 + kW2) + kX + kY;
}

TEST(FusionAnchorE, DivisorModeReproducesTheTable) {
  Analyzed a(kFfn);
  GraphCurveOptions o;
  o.einsum.tiles = TileMode::Divisor;
  o.key_tiling = false;  // the table's FFMT: rows only
  GraphCurveOptions unfused = o;
  unfused.fuse = false;
  GraphTrafficModel fused_model(a.g, a.c, o), unfused_model(a.g, a.c, unfused);
  EXPECT_EQ(a.c.compulsory_bytes(), Count(kX + kW1 + kW2 + kY));  // 0.75 GiB fused
  for (const AnchorRow& row : kAnchor) {
    SCOPED_TRACE(row.capacity);
    const Count s(row.capacity);
    const GraphTraffic nf = unfused_model.at(s, TrafficMode::Attainable);
    EXPECT_NEAR(gib(nf.traffic_bytes), row.unfused_gib, 0.005);
    ASSERT_EQ(nf.groups.size(), 2u);
    std::optional<FusionGroup> tiled =
        fused_model.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled, s);
    ASSERT_TRUE(tiled.has_value());
    EXPECT_EQ(tiled->traffic_bytes, Count(ffmt_traffic(row.tiles)));
    EXPECT_LE(tiled->buffer_bytes, s);
    // h (1 GiB) never fits whole next to anything at these capacities.
    EXPECT_FALSE(fused_model.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Untiled, s));
    // The composition is the pointwise minimum of the strategies.
    const GraphTraffic q = fused_model.at(s, TrafficMode::Attainable);
    EXPECT_EQ(q.traffic_bytes, std::min(nf.traffic_bytes, tiled->traffic_bytes));
  }
  // At H100's L2 tiled fusion loses (weights re-read per row tile); at 256 MiB it wins.
  EXPECT_EQ(fused_model.at(Count(50 * kMiB), TrafficMode::Attainable).groups.size(), 2u);
  const GraphTraffic at256 = fused_model.at(Count(256 * kMiB), TrafficMode::Attainable);
  ASSERT_EQ(at256.groups.size(), 1u);
  EXPECT_EQ(at256.groups[0].kind, FusionKind::Tiled);
  EXPECT_NE(at256.groups[0].detail.find("tiled by 4096"), std::string::npos);
}

TEST(FusionAnchorE, CeilModeIsNeverAboveTheDivisorNumbers) {
  Analyzed a(kFfn);
  GraphCurveOptions div, ffmt;
  div.einsum.tiles = TileMode::Divisor;
  div.key_tiling = ffmt.key_tiling = false;
  GraphTrafficModel ceil_model(a.g, a.c, ffmt), div_model(a.g, a.c, div);
  GraphCurveOptions nf;
  nf.fuse = false;
  GraphTrafficModel ceil_unfused(a.g, a.c, nf);
  for (const AnchorRow& row : kAnchor) {
    SCOPED_TRACE(row.capacity);
    const Count s(row.capacity);
    const Count unfused = ceil_unfused.at(s, TrafficMode::Attainable).traffic_bytes;
    EXPECT_LE(gib(unfused), row.unfused_gib + 0.005);
    std::optional<FusionGroup> tiled =
        ceil_model.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled, s);
    ASSERT_TRUE(tiled.has_value());
    EXPECT_LE(tiled->traffic_bytes, Count(ffmt_traffic(row.tiles)));
    const GraphTraffic q = ceil_model.at(s, TrafficMode::Attainable);
    EXPECT_EQ(q.traffic_bytes, std::min(unfused, tiled->traffic_bytes));
    EXPECT_LE(q.traffic_bytes, div_model.at(s, TrafficMode::Attainable).traffic_bytes);
  }
  // Ceil tiles at 50 MiB: 24 row tiles of 1366 rows (an intermediate tile of 42.7 MiB; the
  // last tile has 32768 - 23 * 1366 = 1350 rows) beat the 32 power-of-two tiles; weights
  // still re-read per tile, x and y moved once.
  std::optional<FusionGroup> t50 =
      ceil_model.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled, Count(50 * kMiB));
  EXPECT_EQ(t50->traffic_bytes, Count(24 * (kW1 + kW2) + kX + kY));
  EXPECT_NE(t50->detail.find("tiled by 1366 (24 tiles)"), std::string::npos);
}

TEST(FusionAnchorE, HiddenUnitTilingHoldsRowTilesOfXAndY) {
  // Key tiling over the hidden rank f: per row tile of p rows, one hidden unit at a time
  // computes h[p, f] and accumulates y[p, :] += h[p, f] * W2[f, :], holding the x and y row
  // tiles (p * (D + D) * 2 bytes) instead of FFMT's h tile (p * F * 2 bytes). The weights are
  // still read once per row tile.
  Analyzed a(kFfn);
  GraphCurveOptions div, ffmt;
  div.einsum.tiles = TileMode::Divisor;
  ffmt = div;
  ffmt.key_tiling = false;
  GraphTrafficModel m(a.g, a.c, div), rows_only(a.g, a.c, ffmt);
  // 50 MiB: p = 2048 (32 MiB held; 4096 rows would need 64 MiB): 16 row tiles.
  std::optional<FusionGroup> t =
      m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled, Count(50 * kMiB));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->traffic_bytes, Count(ffmt_traffic(M / 2048)));
  EXPECT_NE(t->detail.find("key rank 'f'"), std::string::npos);
  // 256 MiB: p = 8192 (128 MiB held), 4 row tiles.
  EXPECT_EQ(m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled, Count(256 * kMiB))
                ->traffic_bytes,
            Count(ffmt_traffic(M / 8192)));
  for (const AnchorRow& row : kAnchor)
    EXPECT_LE(m.at(Count(row.capacity), TrafficMode::Attainable).traffic_bytes,
              rows_only.at(Count(row.capacity), TrafficMode::Attainable).traffic_bytes);
}

TEST(FusionTiled, AttentionHeadsAreABatchRankAndKeysAreTiledOnline) {
  // scores, exp and the AV product of 4 heads, 32 queries and keys, head size 8, f32. Every
  // tensor has the head rank h: one head at a time (tile 1) holds only that head's K and V.
  Analyzed a(R"(
    q = f32[32,4,8] input
    k = f32[32,4,8] input
    v = f32[32,4,8] input
    s = f32[4,32,32] einsum [h,i,j,e] sum mul($0,$1) (q[i,h,e], k[j,h,e]) -> [h,i,j]
    p = f32[4,32,32] einsum [h,i,j] none exp($0) (s[h,i,j]) -> [h,i,j]
    o = f32[32,4,8]{output} einsum [i,h,e,j] sum mul($0,$1) (p[h,i,j], v[j,h,e]) -> [i,h,e])");
  constexpr std::uint64_t t = 4 * 32 * 4 * 8;  // bytes of q, k, v and o
  GraphCurveOptions rows_only;
  rows_only.key_tiling = false;
  GraphTrafficModel flat(a.g, a.c, rows_only), flash(a.g, a.c);
  // 3 KiB: one head's K and V (2 KiB) stay next to a few query rows of scores (128 B per
  // row per resident tensor): every tensor moves once. K and V of all heads (8 KiB) and the
  // scores (16 KiB) would not fit.
  std::optional<FusionGroup> g3 =
      flat.group_at(ir::OpId{0}, ir::OpId{2}, FusionKind::Tiled, Count(3 * 1024));
  ASSERT_TRUE(g3);
  EXPECT_EQ(g3->traffic_bytes, Count(4 * t));
  EXPECT_NE(g3->detail.find("4 batch slices"), std::string::npos);
  // 1 KiB: K and V are re-read per query row tile. Holding q and o rows (64 B per row per
  // head) instead of score rows (2 x 128 B), the key-tiled schedule takes larger row tiles.
  const Count s1(1024);
  std::optional<FusionGroup> f1 = flash.group_at(ir::OpId{0}, ir::OpId{2}, FusionKind::Tiled, s1);
  std::optional<FusionGroup> r1 = flat.group_at(ir::OpId{0}, ir::OpId{2}, FusionKind::Tiled, s1);
  ASSERT_TRUE(f1 && r1);
  EXPECT_LT(f1->traffic_bytes, r1->traffic_bytes);
  EXPECT_NE(f1->detail.find("key rank 'j'"), std::string::npos);
  EXPECT_GE(f1->traffic_bytes, Count(4 * t));
}

TEST(FusionTiled, KeyTilingNeedsTheKeyReducedInside) {
  // y = e * rowsum(e) keeps the column rank c in its output: streaming c one column at a time
  // would write y before the row sums are complete, so only row tiling applies.
  Analyzed a(R"(
    x = f32[64,32] input
    e = f32[64,32] einsum [i,c] none exp($0) (x[i,c]) -> [i,c]
    r = f32[64] einsum [i,c] sum $0 (e[i,c]) -> [i]
    y = f32[64,32]{output} einsum [i,c] none mul($0,$1) (e[i,c], r[i]) -> [i,c])");
  GraphTrafficModel m(a.g, a.c);
  std::optional<FusionGroup> t =
      m.group_at(ir::OpId{0}, ir::OpId{2}, FusionKind::Tiled, Count(512));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->detail.find("key rank"), std::string::npos);
  EXPECT_NE(t->detail.find("rank 'i'"), std::string::npos);
}

TEST(FusionShares, GroupTrafficIsSplitByEachOpsOwnBytes) {
  Analyzed a(kFfn);
  GraphTrafficModel m(a.g, a.c);
  const GraphTraffic q = m.at(Count(256 * kMiB), TrafficMode::Attainable);
  ASSERT_EQ(q.groups.size(), 1u);
  // Both matmuls move x/y (256 MiB), a weight (128 MiB) and h (1 GiB) unfused: equal halves.
  EXPECT_EQ(a.c.per_op[0].bytes(), a.c.per_op[1].bytes());
  EXPECT_EQ(q.op_traffic_bytes[0], q.op_traffic_bytes[1]);
  EXPECT_EQ(q.op_traffic_bytes[0] + q.op_traffic_bytes[1], q.traffic_bytes);
}

// ---- untiled fusion on small graphs --------------------------------------------------------

TEST(FusionUntiled, ChainKeepsItsIntermediateOnChip) {
  Analyzed a(R"(
    x = f32[64,32] input
    e = f32[64,32] einsum [r,c] none exp($0) (x[r,c]) -> [r,c]
    y = f32[64,32]{output} einsum [r,c] none mul($0,2) (e[r,c]) -> [r,c])");
  constexpr std::uint64_t t = 4 * 64 * 32;  // bytes of each tensor
  GraphTrafficModel m(a.g, a.c);
  const Count big(kMiB);
  std::optional<FusionGroup> u = m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Untiled, big);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->traffic_bytes, Count(t + t));  // x read, y written; e never leaves the chip
  EXPECT_GE(u->buffer_bytes, Count(t));       // e is reserved whole
  const GraphTraffic q = m.at(big, TrafficMode::Attainable);
  EXPECT_EQ(q.traffic_bytes, a.c.compulsory_bytes());
  ASSERT_EQ(q.groups.size(), 1u);
  EXPECT_EQ(q.groups[0].ops.size(), 2u);
  EXPECT_NE(q.groups[0].kind, FusionKind::None);
  // Without fusion each op moves its own input and output.
  GraphCurveOptions nf;
  nf.fuse = false;
  EXPECT_EQ(GraphTrafficModel(a.g, a.c, nf).at(big, TrafficMode::Attainable).traffic_bytes,
            Count(4 * t));
  // Below the size of e, untiled fusion does not fit.
  EXPECT_FALSE(m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Untiled, Count(t - 1)));
}

TEST(FusionUntiled, IntermediateThatIsAnOutputIsStillWritten) {
  Analyzed a(R"(
    x = f32[64,32] input
    e = f32[64,32]{output} einsum [r,c] none exp($0) (x[r,c]) -> [r,c]
    y = f32[64,32]{output} einsum [r,c] none mul($0,2) (e[r,c]) -> [r,c])");
  constexpr std::uint64_t t = 4 * 64 * 32;
  GraphTrafficModel m(a.g, a.c);
  std::optional<FusionGroup> u =
      m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Untiled, Count(kMiB));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->traffic_bytes, Count(3 * t));  // x read, e and y written; e not re-read
}

TEST(FusionUntiled, IntermediateReadAfterTheSegmentIsWritten) {
  Analyzed a(R"(
    x = f32[64,32] input
    e = f32[64,32] einsum [r,c] none exp($0) (x[r,c]) -> [r,c]
    y = f32[64,32] einsum [r,c] none mul($0,2) (e[r,c]) -> [r,c]
    z = f32[64,32]{output} einsum [r,c] none add($0,$1) (e[r,c], y[r,c]) -> [r,c])");
  constexpr std::uint64_t t = 4 * 64 * 32;
  GraphTrafficModel m(a.g, a.c);
  std::optional<FusionGroup> u =
      m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Untiled, Count(kMiB));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->traffic_bytes, Count(3 * t));  // x read; e written for z; y written
  // All three fused: only x and z move.
  EXPECT_EQ(m.at(Count(kMiB), TrafficMode::Attainable).traffic_bytes, Count(2 * t));
}

TEST(FusionUntiled, FreeViewsAreTransparent) {
  Analyzed a(R"(
    x = f32[64,32] input
    e = f32[64,32] einsum [r,c] none exp($0) (x[r,c]) -> [r,c]
    v = f32[2048] move view (e)
    y = f32[2048]{output} einsum [i] none mul($0,2) (v[i]) -> [i])");
  constexpr std::uint64_t t = 4 * 64 * 32;
  GraphTrafficModel m(a.g, a.c);
  // Ops 0 and 2 (the view, op 1, is skipped and costs nothing).
  std::optional<FusionGroup> u =
      m.group_at(ir::OpId{0}, ir::OpId{2}, FusionKind::Untiled, Count(kMiB));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->traffic_bytes, Count(2 * t));
  EXPECT_EQ(u->ops.size(), 2u);
  // The view merges the rows with the columns: the flat rank's outer part walks the rows (32
  // positions per row), so the pair tiles by rows as well.
  std::optional<FusionGroup> tiled =
      m.group_at(ir::OpId{0}, ir::OpId{2}, FusionKind::Tiled, Count(kMiB));
  ASSERT_TRUE(tiled);
  EXPECT_EQ(tiled->traffic_bytes, Count(2 * t));
  const GraphTraffic q = m.at(Count(kMiB), TrafficMode::Attainable);
  EXPECT_EQ(q.op_traffic_bytes[1], Count(0));  // the view
  EXPECT_EQ(q.op_traffic_bytes[0] + q.op_traffic_bytes[2], q.traffic_bytes);
}

// ---- tiled fusion --------------------------------------------------------------------------

TEST(FusionTiled, ChainTilesByRowsBelowTheIntermediateSize) {
  // y is read inside the group (by z), so the hidden units cannot be the fused rank (y would
  // be incomplete when z reads it): rows (m) are.
  Analyzed a(R"(
    x = f32[256,64] input
    w1 = f32[64,512] weight
    w2 = f32[512,64] weight
    h = f32[256,512] einsum "md,df->mf" (x, w1)
    hv = f32[256,512] move view (h)
    y = f32[256,64] einsum "mf,fd->md" (hv, w2)
    z = f32[256,64]{output} einsum [m,d] none exp($0) (y[m,d]) -> [m,d])");
  constexpr std::uint64_t x = 4 * 256 * 64, w1 = 4 * 64 * 512, w2 = 4 * 512 * 64,
                          z = 4 * 256 * 64, h = 4 * 256 * 512;
  GraphTrafficModel m(a.g, a.c);
  const Count s(h / 2);  // 256 KiB: h does not fit whole
  EXPECT_FALSE(m.group_at(ir::OpId{0}, ir::OpId{3}, FusionKind::Untiled, s));
  std::optional<FusionGroup> t = m.group_at(ir::OpId{0}, ir::OpId{3}, FusionKind::Tiled, s);
  ASSERT_TRUE(t);
  // Both weights (256 KiB together) cannot stay next to a row tile, so they are re-read per
  // row tile; x and z move once. Two row tiles would need 128 KiB of intermediate tile plus
  // both weights (256 KiB): too much; the least traffic re-reads the weights T >= 2 times.
  EXPECT_GE(t->traffic_bytes, Count(2 * (w1 + w2) + x + z));
  EXPECT_LT(t->traffic_bytes, Count(2 * (x + w1 + h) + 2 * (h + w2 + z)));  // below unfused
  EXPECT_NE(t->detail.find("rank 'm'"), std::string::npos);
  EXPECT_LE(t->buffer_bytes, s);
  // Large enough for the weights and a row tile: compulsory.
  EXPECT_EQ(m.at(Count(h / 2 + w1 + w2), TrafficMode::Attainable).traffic_bytes,
            Count(x + w1 + w2 + z));
}

// einops' rearrange before a bmm (KernelBench's Mamba2): a permute lowered as a flat view read
// at strides, then a reshape merging batch and heads. The batch rank is followed as the
// elements it walks: through the flat view into the copy's split read, and into the bmm as
// the outer part of its merged batch rank (4 heads per batch row).
TEST(FusionTiled, RanksAreFollowedThroughFlatPermutesAndMergedBatches) {
  constexpr std::uint64_t B = 16, S = 32, H = 4, D = 16, N = 8;
  Analyzed a(R"(
    x = f32[16,32,4,16] input
    w = f32[64,16,8] input
    e = f32[16,32,4,16] einsum [b,s,h,d] none exp($0) (x[b,s,h,d]) -> [b,s,h,d]
    ef = f32[32768] move view (e)
    c = f32[16,4,32,16] einsum [b=16,h=4,s=32,d=16] none $0 (ef[b*2048+h*16+s*64+d]) -> [b,h,s,d]
    cv = f32[64,32,16] move view (c)
    y = f32[64,32,8]{output} einsum "bsd,bdn->bsn" (cv, w))");
  constexpr std::uint64_t x = 4 * B * S * H * D, w = 4 * B * H * D * N, y = 4 * B * H * S * N;
  GraphTrafficModel m(a.g, a.c);
  const Count s(x / 2);  // e does not fit whole, nor does c
  const ir::OpId e{0}, out{4};  // ops e, ef (view), c, cv (view), y
  EXPECT_FALSE(m.group_at(e, out, FusionKind::Untiled, s));
  std::optional<FusionGroup> t = m.group_at(e, out, FusionKind::Tiled, s);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->traffic_bytes, Count(x + w + y));  // compulsory: nothing round-trips
  EXPECT_NE(t->detail.find("rank 'b' (16 rows)"), std::string::npos) << t->detail;
  EXPECT_EQ(m.at(s, TrafficMode::Attainable).traffic_bytes, Count(x + w + y));
}

// An eval-mode batch norm after a convolution: its rsqrt(var + eps) reads only parameters
// and sits between the two in graph order, with no batch rank. Run first (order_units), it
// costs its own few bytes, and the convolution and the normalization tile by the batch.
TEST(FusionTiled, ParameterOnlyOpsRunFirstAndLeaveTheBatchRunWhole) {
  Analyzed a(R"(
    x = f32[8,4,16,16] input
    w = f32[8,4,3,3] weight
    var = f32[8] weight
    c = f32[8,8,16,16] einsum [n=8,k=8,c=4,p=16,q=16,r=3,s=3] sum mul($0,$1) (x[n,c,p+r-1,q+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q]
    inv = f32[8] einsum [k=8] none rsqrt(add($0,1e-05)) (var[k]) -> [k]
    y = f32[8,8,16,16]{output} einsum [n,k,p,q] none mul($0,$1) (c[n,k,p,q], inv[k]) -> [n,k,p,q])");
  constexpr std::uint64_t x = 4 * 8 * 4 * 16 * 16, w = 4 * 8 * 4 * 3 * 3, v = 4 * 8,
                          c = 4 * 8 * 8 * 16 * 16, y = c;
  GraphTrafficModel m(a.g, a.c);
  const Count s(x);  // c does not fit whole
  const GraphTraffic q = m.at(s, TrafficMode::Attainable);
  // x, w and var read once, y written once; inv written once and read once; c stays on chip.
  EXPECT_EQ(q.traffic_bytes, Count(x + w + v + y + 2 * v));
  ASSERT_EQ(q.groups.size(), 2u);
  EXPECT_EQ(q.groups[0].ops, (std::vector<ir::OpId>{ir::OpId{1}}));  // inv, first
  EXPECT_EQ(q.groups[1].kind, FusionKind::Tiled);
  EXPECT_EQ(q.groups[1].ops, (std::vector<ir::OpId>{ir::OpId{0}, ir::OpId{2}}));
}

TEST(FusionTiled, SourceReadTwiceAlongTheRowsIsLoadedOncePerRowTile) {
  // x * sigmoid(x) (Swish) and a keepdim softmax: x does not fit on chip whole, but each row
  // tile of it is loaded once and held until its last reader, so the chain moves the
  // compulsory traffic. The softmax's kept size-1 dims ([r, 0]) stay plain.
  constexpr std::int64_t R = 512, C = 1024;
  const std::string swish = fmt::format(R"(
    x = f32[{0},{1}] input
    s = f32[{0},{1}] einsum [r,c] none sigmoid($0) (x[r,c]) -> [r,c]
    y = f32[{0},{1}]{{output}} einsum [r,c] none mul($0,$1) (x[r,c], s[r,c]) -> [r,c])", R, C);
  const std::string softmax = fmt::format(R"(
    x = f32[{0},{1}] input
    m = f32[{0},1] einsum [r={0},k={1}] max $0 (x[r,k]) -> [r,0]
    e = f32[{0},{1}] einsum [r,c] none exp(sub($0,$1)) (x[r,c], m[r,0]) -> [r,c]
    z = f32[{0},1] einsum [r={0},k={1}] sum $0 (e[r,k]) -> [r,0]
    y = f32[{0},{1}]{{output}} einsum [r,c] none div($0,$1) (e[r,c], z[r,0]) -> [r,c])", R, C);
  const std::uint64_t tensor = 4 * R * C;
  for (const std::string& text : {swish, softmax}) {
    SCOPED_TRACE(text);
    Analyzed a(text);
    GraphTrafficModel m(a.g, a.c);
    const GraphTraffic q = m.at(Count(tensor / 8), TrafficMode::Attainable);
    EXPECT_EQ(q.traffic_bytes, Count(2 * tensor));  // x read once, y written once
    ASSERT_EQ(q.groups.size(), 1u);
    EXPECT_EQ(q.groups[0].kind, FusionKind::Tiled);
  }
}

TEST(FusionTiled, LossGatherReadsItsRowsOnChipBesideAnIndependentOp) {
  // A cross-entropy's shape: log-softmax-like rows, an op on the targets that reads nothing
  // of the rows (any of its ranks of the same extent joins the row tiles), and a gather of
  // one element per row from the on-chip rows. Only x, the targets and the picked values
  // move; alone, the gather costs its own bytes, not its pattern's whole rows.
  constexpr std::int64_t R = 512, C = 1024;
  Analyzed a(fmt::format(R"(
    x = f32[{0},{1}] input
    tgt = i64[{0}] input
    m = f32[{0},1] einsum [r={0},k={1}] max $0 (x[r,k]) -> [r,0]
    e = f32[{0},{1}] einsum [r,c] none sub($0,$1) (x[r,c], m[r,0]) -> [r,c]
    v = i64[{0}] einsum [r] none add($0,0) (tgt[r]) -> [r]
    vi = i64[{0},1] move view (v)
    g = f32[{0},1]{{output}} move gather {{axis=1, mode="elements"}} (e, vi))", R, C));
  GraphTrafficModel m(a.g, a.c);
  const GraphTraffic q = m.at(Count(4 * R * C / 8), TrafficMode::Attainable);
  EXPECT_EQ(q.traffic_bytes, Count(4 * R * C + 8 * R + 4 * R));
  ASSERT_EQ(q.groups.size(), 1u);
  EXPECT_EQ(q.groups[0].kind, FusionKind::Tiled);
  const ir::OpId gather{4};
  const FusionGroup alone = *m.group_at(gather, gather, FusionKind::None, Count(4 * R * C));
  EXPECT_EQ(alone.traffic_bytes, a.c.per_op[gather.value].bytes());
}

TEST(FusionTiled, ReductionOverTheFusedRankAccumulatesOnChip) {
  // The MLP tiled by its hidden units f: each f tile makes h[:, f] from x (held) and w1[:, f],
  // and adds h[:, f] w2[f, :] into y, which stays on chip across the f loop and is written
  // once. Below the size of h, with room for x and y: compulsory traffic.
  Analyzed a(R"(
    x = f32[256,64] input
    w1 = f32[64,512] weight
    w2 = f32[512,64] weight
    h = f32[256,512] einsum "md,df->mf" (x, w1)
    y = f32[256,64]{output} einsum "mf,fd->md" (h, w2))");
  constexpr std::uint64_t x = 4 * 256 * 64, w1 = 4 * 64 * 512, w2 = 4 * 512 * 64,
                          y = 4 * 256 * 64, h = 4 * 256 * 512;
  GraphTrafficModel m(a.g, a.c);
  std::optional<FusionGroup> t = m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled,
                                            Count(h / 2));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->traffic_bytes, Count(x + w1 + w2 + y));
  EXPECT_NE(t->detail.find("rank 'f'"), std::string::npos) << t->detail;
  EXPECT_GE(t->buffer_bytes, Count(x + y));  // x held, y accumulated
  // Without room for the accumulator y beside x, that schedule does not fit.
  std::optional<FusionGroup> small = m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled,
                                                Count(y / 2));
  if (small) {
    EXPECT_GT(small->traffic_bytes, Count(x + w1 + w2 + y));
  }
}

TEST(FusionTiled, ReducedRankIsNotFused) {
  // The consumer sums over the producer's rows: partial sums would cross ops (FFMR forbids
  // it), so rows are not a fused rank; the columns (n) are.
  Analyzed a(R"(
    x = f32[128,32] input
    w = f32[32,64] weight
    h = f32[128,64] einsum "mk,kn->mn" (x, w)
    y = f32[64]{output} einsum [m,n] sum $0 (h[m,n]) -> [n])");
  GraphTrafficModel m(a.g, a.c);
  std::optional<FusionGroup> t =
      m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled, Count(4096));
  ASSERT_TRUE(t);
  EXPECT_NE(t->detail.find("rank 'n'"), std::string::npos);
}

// ---- ops without a curve -------------------------------------------------------------------

TEST(FusionData, PermutesTileAsCopiesAndMaskedEinsumsTileTheirLiveRegion) {
  Analyzed a(R"(
    x = f32[16,32] input
    s = f32[32,32] input
    t = f32[32,16]{output} move permute {perm=[1,0]} (x)
    m = f32[32,32]{output} einsum [q=32,k=32] none mul($0,2) (s[q,k]) -> [q,k] where q >= k)");
  GraphCurveOptions nf;
  nf.fuse = false;
  GraphTrafficModel m(a.g, a.c, nf);
  // A permute reads and writes each element once (problem_from_pattern), at any tiling.
  ASSERT_NE(m.op_curve(ir::OpId{0}), nullptr);
  EXPECT_EQ(m.op_curve(ir::OpId{0})->floor().traffic_bytes, Count(2 * 4 * 16 * 32));
  // masked: tiled by its live tiles (MaskedEinsum::Live); at its floor, one tile, it reads s
  // and writes m whole (masks do not shrink footprints)
  ASSERT_NE(m.op_curve(ir::OpId{1}), nullptr);
  EXPECT_EQ(m.op_curve(ir::OpId{1})->floor().traffic_bytes, Count(2 * 4 * 32 * 32));
  const GraphTraffic q = m.at(Count(64), TrafficMode::Attainable);
  EXPECT_EQ(q.traffic_bytes, a.c.per_op[0].bytes() + a.c.per_op[1].bytes());
  EXPECT_EQ(q.traffic_bytes, Count(2 * 4 * 16 * 32 + 2 * 4 * 32 * 32));  // read + write each
  EXPECT_EQ(q.op_traffic_bytes[0], a.c.per_op[0].bytes());
}

TEST(FusionData, MaskedEinsumReadsAnOnChipInput) {
  // A masked einsum in an untiled or a row-tiled segment: its on-chip input costs nothing,
  // and the output tiles without a live point are still written (they hold 0).
  Analyzed a(R"(
    x = f32[32,32] input
    s = f32[32,32] einsum [q,k] none exp($0) (x[q,k]) -> [q,k]
    m = f32[32,32]{output} einsum [q=32,k=32] none mul($0,2) (s[q,k]) -> [q,k] where q >= k)");
  constexpr std::uint64_t t = 4 * 32 * 32;
  GraphTrafficModel m(a.g, a.c);
  std::optional<FusionGroup> u =
      m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Untiled, Count(kMiB));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->traffic_bytes, Count(t + t));  // x read, m written; s stays on chip
  EXPECT_EQ(m.at(Count(kMiB), TrafficMode::Attainable).traffic_bytes, a.c.compulsory_bytes());
  std::optional<FusionGroup> tiled =
      m.group_at(ir::OpId{0}, ir::OpId{1}, FusionKind::Tiled, Count(kMiB));
  ASSERT_TRUE(tiled);
  EXPECT_EQ(tiled->traffic_bytes, Count(t + t));
}

TEST(FusionData, MaskedEinsumBoundCountsItsLiveMacs) {
  // A causal P V read from DRAM: its GEMM bound counts the live MACs, 256 * 257 / 2 * 64, not
  // the box's (which would overstate what the masked op must move).
  const std::string text = R"(
    p = f32[256,256] input
    v = f32[256,64] input
    o = f32[256,64]{output} einsum [i=256,j=256,e=64] sum mul($0,$1) (p[i,j], v[j,e]) -> [i,e])";
  Analyzed masked(text + " where i >= j");
  Analyzed dense(text);
  GraphTrafficModel m(masked.g, masked.c), d(dense.g, dense.c);
  const Count small(1024);
  const GraphTraffic pm = m.at(small, TrafficMode::Provable);
  EXPECT_GT(pm.traffic_bytes, masked.c.compulsory_bytes());
  EXPECT_NE(pm.detail.find("G = 2.10534e+06"), std::string::npos) << pm.detail;
  EXPECT_LT(pm.traffic_bytes, d.at(small, TrafficMode::Provable).traffic_bytes);
  EXPECT_LE(pm.traffic_bytes, m.at(small, TrafficMode::Attainable).traffic_bytes);
}

TEST(FusionData, UnanalyzedOpsContributeNothing) {
  Analyzed a(R"(
    x = f32[16,32] input
    f = f32[16,32] unanalyzed "aten::_fft_r2c" {reason="no lowering"} (x)
    y = f32[16,32]{output} einsum [r,c] none exp($0) (f[r,c]) -> [r,c])");
  GraphTrafficModel m(a.g, a.c);
  const GraphTraffic q = m.at(Count(kMiB), TrafficMode::Attainable);
  EXPECT_EQ(q.traffic_bytes, Count(2 * 4 * 16 * 32));  // only the exp: read f, write y
  EXPECT_EQ(q.op_traffic_bytes[0], Count(0));
  ASSERT_EQ(q.groups.size(), 1u);
  EXPECT_EQ(q.groups[0].ops, std::vector<ir::OpId>{ir::OpId{1}});
}

TEST(FusionErrors, CapacityMustBePositive) {
  Analyzed a(kFfn);
  GraphTrafficModel m(a.g, a.c);
  try {
    m.at(Count(0), TrafficMode::Attainable);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_NE(std::string(e.what()).find("capacity must be > 0"), std::string::npos);
  }
  EXPECT_THROW(m.at(std::vector<Count>{Count(1024), Count(0)}, TrafficMode::Provable),
               UserError);
}

TEST(FusionErrors, CostOfAnotherGraphIsRefused) {
  Analyzed a(kFfn);
  Analyzed b(R"(
    x = f32[4] input
    y = f32[4]{output} einsum [i] none exp($0) (x[i]) -> [i])");
  try {
    GraphTrafficModel m(a.g, b.c);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_NE(std::string(e.what()).find("another graph"), std::string::npos);
  }
}

TEST(FusionNames, ModesAndKindsRoundTrip) {
  for (TrafficMode m : {TrafficMode::Attainable, TrafficMode::Provable})
    EXPECT_EQ(parse_traffic_mode(traffic_mode_name(m)), m);
  EXPECT_FALSE(parse_traffic_mode("fused"));
  EXPECT_EQ(fusion_kind_name(FusionKind::Tiled), "tiled");
}

// ---- provable mode -------------------------------------------------------------------------

TEST(FusionProvable, GemmFromSourcesToAnOutputKeepsItsFullBound) {
  Analyzed a(R"(
    a = f32[1024,1024] input
    b = f32[1024,1024] weight
    c = f32[1024,1024]{output} einsum "mk,kn->mn" (a, b))");
  GraphTrafficModel m(a.g, a.c);
  const Count s(64 * 1024);
  const GraphTraffic p = m.at(s, TrafficMode::Provable);
  const ProvableBound op = provable_bound(a.g, a.g.op(ir::OpId{0}), s);
  ASSERT_EQ(op.formula, BoundFormula::Gemm);
  EXPECT_EQ(p.traffic_bytes, op.traffic_bytes);
  EXPECT_GT(p.traffic_bytes, a.c.compulsory_bytes());
  EXPECT_NE(p.detail.find("gemm on op 0"), std::string::npos);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.op_traffic_bytes[0], p.traffic_bytes);
  EXPECT_LE(p.traffic_bytes, m.at(s, TrafficMode::Attainable).traffic_bytes);
}

TEST(FusionProvable, OutputKeptOnChipGivesTheWeakerForm) {
  Analyzed a(R"(
    a = f32[1024,1024] input
    b = f32[1024,1024] weight
    h = f32[1024,1024] einsum "mk,kn->mn" (a, b)
    y = f32[1024,1024]{output} einsum [m,n] none exp($0) (h[m,n]) -> [m,n])");
  GraphTrafficModel m(a.g, a.c);
  // S = 256 B = 64 words: G / (2 min(M, N, 2S)) - S words, 4 B per word.
  const double s_words = 64, g = 1024.0 * 1024 * 1024;
  const double want = (g / (2 * std::min({1024.0, 1024.0, 2 * s_words})) - s_words) * 4;
  const GraphTraffic p = m.at(Count(256), TrafficMode::Provable);
  EXPECT_NEAR(p.traffic_bytes.to_double(), want, 2);  // the bound shaves 1e-9 for rounding
  EXPECT_GT(p.traffic_bytes, a.c.compulsory_bytes());
  EXPECT_NE(p.detail.find("output on chip"), std::string::npos);
  // At 64 KiB the weak form is below the compulsory traffic, which then holds.
  EXPECT_EQ(m.at(Count(64 * 1024), TrafficMode::Provable).traffic_bytes, a.c.compulsory_bytes());
}

TEST(FusionProvable, OpReadingAnIntermediateGivesNothing) {
  Analyzed a(R"(
    a = f32[256,256] input
    e = f32[256,256] einsum [m,k] none exp($0) (a[m,k]) -> [m,k]
    b = f32[256,256] weight
    c = f32[256,256]{output} einsum "mk,kn->mn" (e, b))");
  GraphTrafficModel m(a.g, a.c);
  const GraphTraffic p = m.at(Count(256), TrafficMode::Provable);
  EXPECT_EQ(p.traffic_bytes, a.c.compulsory_bytes());
  EXPECT_TRUE(p.groups.empty());
}

// ---- sparse tensors at their compressed width ----------------------------------------------

// H100 SXM's summed on-chip capacity (docs/bounds.md): 50 MB + 132 x (228 + 256) KiB.
constexpr std::uint64_t kH100 = 50'000'000 + 132 * (228 + 256) * 1024;

// A 4096^3 bf16 GEMM with a 2:4 weight: the weight moves as half its values with a 2-bit
// index each, so once it fits Q(S) is the compulsory traffic (85.98 MB), not the three dense
// matrices (100.7 MB); the provable mode never exceeds it.
TEST(FusionSparse, TwoFourGemmReachesItsCompressedCompulsory) {
  constexpr std::uint64_t N = 4096;
  Analyzed a(R"(
    a = bf16[4096,4096] input
    w = bf16[4096,4096]{sparsity="2:4"} weight
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, w))");
  const Count compulsory(2 * N * N + N * N / 2 * (16 + 2) / 8 + 2 * N * N);  // a + w + c
  EXPECT_EQ(a.c.compulsory_bytes(), compulsory);
  GraphTrafficModel m(a.g, a.c);
  for (std::uint64_t s : {kH100, kGiB}) {
    EXPECT_EQ(m.at(Count(s), TrafficMode::Attainable).traffic_bytes, compulsory) << s;
    EXPECT_EQ(m.at(Count(s), TrafficMode::Provable).traffic_bytes, compulsory) << s;
  }
  Count prev = m.at(Count(1024), TrafficMode::Attainable).traffic_bytes;
  for (std::uint64_t s = 2048; s <= kGiB; s *= 2) {
    const Count q = m.at(Count(s), TrafficMode::Attainable).traffic_bytes;
    EXPECT_LE(q, prev) << s;
    EXPECT_LE(m.at(Count(s), TrafficMode::Provable).traffic_bytes, q) << s;
    prev = q;
  }
}

// An unstructured-sparse weight (90% zeros, a bitmap and the nonzeros) likewise.
TEST(FusionSparse, BitmapWeightReachesItsCompressedCompulsory) {
  constexpr std::uint64_t N = 4096;
  Analyzed a(R"(
    a = bf16[4096,4096] input
    w = bf16[4096,4096]{zeros=0.9} weight
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, w))");
  // w: one bit per element, then its nonzeros (N^2 - floor(0.9 N^2)) at 2 bytes.
  const Count compulsory(2 * N * N + (N * N / 8 + (N * N - N * N * 9 / 10) * 2) + 2 * N * N);
  EXPECT_EQ(a.c.compulsory_bytes(), compulsory);
  GraphTrafficModel m(a.g, a.c);
  for (std::uint64_t s : {kH100, kGiB}) {
    EXPECT_EQ(m.at(Count(s), TrafficMode::Attainable).traffic_bytes, compulsory) << s;
    EXPECT_EQ(m.at(Count(s), TrafficMode::Provable).traffic_bytes, compulsory) << s;
  }
}

// A chain through a 2:4 weight fused by rows: row tiles along the weight's group dimension
// are whole groups, and a resident or re-read weight costs its compressed bytes.
TEST(FusionSparse, FusedChainKeepsTheWeightCompressed) {
  Analyzed a(R"(
    x = bf16[64,256] input
    w = bf16[256,512]{sparsity="2:4"} weight
    h = bf16[64,512] einsum "mk,kn->mn" (x, w)
    y = bf16[64,512]{output} einsum [m,n] none exp($0) (h[m,n]) -> [m,n])");
  GraphTrafficModel m(a.g, a.c);
  // Everything fits: x, w compressed (256*512/2 values of 18 bits) and y once.
  const Count compulsory(2 * 64 * 256 + 256 * 512 / 2 * 18 / 8 + 2 * 64 * 512);
  EXPECT_EQ(a.c.compulsory_bytes(), compulsory);
  EXPECT_EQ(m.at(Count(kMiB), TrafficMode::Attainable).traffic_bytes, compulsory);
  Count prev = m.at(Count(256), TrafficMode::Attainable).traffic_bytes;
  for (std::uint64_t s = 512; s <= kMiB; s *= 2) {
    const Count q = m.at(Count(s), TrafficMode::Attainable).traffic_bytes;
    EXPECT_LE(q, prev) << s;
    EXPECT_GE(q, compulsory) << s;
    prev = q;
  }
}

// ---- invariants on random graphs -----------------------------------------------------------

// A random graph of 2-7 ops over 2-D tensors: matmuls with fresh weights, elementwise unary
// and binary ops (a binary op may read one tensor twice), row reductions broadcast back, free
// views that split the columns and merge them again, transposes (a copy, or a flat view read
// at strides), ops over the flattened tensor and masked einsums (tiled as their box). Tensors
// no op reads are outputs (no dead code); other intermediates are outputs with probability
// 1/4.
// With `sparse`, the input and each weight are dense, 2:4 or unstructured sparse (zero
// fractions 0.3 and 0.9, stored as bitmaps) a quarter of the time each.
std::string random_graph(std::mt19937& rng, bool sparse = false) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto sparsity = [&]() -> std::string {
    if (!sparse) return "";
    const char* kinds[] = {"", "{sparsity=\"2:4\"}", "{zeros=0.3}", "{zeros=0.9}"};
    return kinds[uni(0, 3)];
  };
  struct T {
    std::string name;
    int rows, cols;
    std::string type;
  };
  const char* types[] = {"f32", "bf16"};
  std::vector<T> ts;
  std::string text;
  const int rows = uni(2, 24);
  ts.push_back({"x", rows, uni(1, 6) * 2, types[uni(0, 1)]});
  text += fmt::format("x = {}[{},{}]{} input\n", ts[0].type, rows, ts[0].cols, sparsity());
  const int n = uni(2, 7);
  std::set<std::string> read;
  for (int i = 0; i < n; ++i) {
    const T& in = ts[uni(0, static_cast<int>(ts.size()) - 1)];
    const std::string name = fmt::format("t{}", i);
    const std::string type = types[uni(0, 1)];
    const bool last = i + 1 == n;
    // Decided below when nobody reads it.
    const std::string out = last ? "{output}" : (uni(0, 3) == 0 ? "{output}" : "<" + name + ">");
    read.insert(in.name);
    switch (uni(0, 8)) {
      case 0: {
        const int c2 = uni(1, 6) * 2;
        const std::string type_w = types[uni(0, 1)];
        text += fmt::format("w{} = {}[{},{}]{} weight\n", i, type_w, in.cols, c2, sparsity());
        text += fmt::format("{} = {}[{},{}]{} einsum \"rc,cd->rd\" ({}, w{})\n", name, type,
                            in.rows, c2, out, in.name, i);
        ts.push_back({name, in.rows, c2, type});
        break;
      }
      case 1:
        text += fmt::format("{} = {}[{},{}]{} einsum [r,c] none exp($0) ({}[r,c]) -> [r,c]\n",
                            name, type, in.rows, in.cols, out, in.name);
        ts.push_back({name, in.rows, in.cols, type});
        break;
      case 2: {
        std::vector<const T*> same;
        for (const T& t : ts)
          if (t.rows == in.rows && t.cols == in.cols) same.push_back(&t);
        const T& other = *same[uni(0, static_cast<int>(same.size()) - 1)];
        read.insert(other.name);
        text += fmt::format(
            "{} = {}[{},{}]{} einsum [r,c] none add($0,$1) ({}[r,c], {}[r,c]) -> [r,c]\n", name,
            type, in.rows, in.cols, out, in.name, other.name);
        ts.push_back({name, in.rows, in.cols, type});
        break;
      }
      case 3:
        text += fmt::format("{}s = {}[{}] einsum [r,c] sum $0 ({}[r,c]) -> [r]\n", name, type,
                            in.rows, in.name);
        text += fmt::format(
            "{} = {}[{},{}]{} einsum [r,c] none mul($0,$1) ({}[r,c], {}s[r]) -> [r,c]\n", name,
            type, in.rows, in.cols, out, in.name, name);
        ts.push_back({name, in.rows, in.cols, type});
        break;
      case 4:
        if (in.cols % 2 == 0) {
          text += fmt::format("{}v = {}[{},2,{}] move view ({})\n", name, in.type, in.rows,
                              in.cols / 2, in.name);
          text += fmt::format(
              "{}e = {}[{},2,{}] einsum [r,a,b] none exp($0) ({}v[r,a,b]) -> [r,a,b]\n", name,
              type, in.rows, in.cols / 2, name);
          text += fmt::format("{} = {}[{},{}]{} move view ({}e)\n", name, type, in.rows,
                              in.cols, out, name);
        } else {
          text += fmt::format("{} = {}[{},{}]{} einsum [r,c] none exp($0) ({}[r,c]) -> [r,c]\n",
                              name, type, in.rows, in.cols, out, in.name);
        }
        ts.push_back({name, in.rows, in.cols, type});
        break;
      case 5:  // a transpose that copies
        text += fmt::format("{} = {}[{},{}]{} move permute {{perm=[1,0]}} ({})\n", name, in.type,
                            in.cols, in.rows, out, in.name);
        ts.push_back({name, in.cols, in.rows, in.type});
        break;
      case 6:  // a masked einsum: tiled by its live tiles
        text += fmt::format(
            "{} = {}[{},{}]{} einsum [r={},c={}] none mul($0,2) ({}[r,c]) -> [r,c] where r >= c\n",
            name, type, in.rows, in.cols, out, in.rows, in.cols, in.name);
        ts.push_back({name, in.rows, in.cols, type});
        break;
      case 7:  // a transpose as torch lowers a permuted view: a flat view read at strides
        text += fmt::format("{}f = {}[{}] move view ({})\n", name, in.type, in.rows * in.cols,
                            in.name);
        text += fmt::format(
            "{} = {}[{},{}]{} einsum [a={},b={}] none $0 ({}f[b*{}+a]) -> [a,b]\n", name,
            in.type, in.cols, in.rows, out, in.cols, in.rows, name, in.cols);
        ts.push_back({name, in.cols, in.rows, in.type});
        break;
      case 8:  // an op over the flattened tensor: its rank holds the rows as its outer part
        text += fmt::format("{}v = {}[{}] move view ({})\n", name, in.type, in.rows * in.cols,
                            in.name);
        text += fmt::format("{}e = {}[{}] einsum [i] none exp($0) ({}v[i]) -> [i]\n", name,
                            type, in.rows * in.cols, name);
        text += fmt::format("{} = {}[{},{}]{} move view ({}e)\n", name, type, in.rows, in.cols,
                            out, name);
        ts.push_back({name, in.rows, in.cols, type});
        break;
    }
  }
  for (int i = 0; i < n; ++i) {
    const std::string name = fmt::format("t{}", i);
    const std::string mark = "<" + name + ">";
    if (const std::size_t at = text.find(mark); at != std::string::npos)
      text.replace(at, mark.size(), read.count(name) ? "" : "{output}");
  }
  return text;
}

std::vector<Count> capacities() {
  std::vector<Count> s;
  for (std::uint64_t c = 8; c <= (std::uint64_t{1} << 22); c = c * 3 / 2) s.push_back(Count(c));
  return s;
}

// Q(S) is non-increasing in S, between the compulsory bytes and the no-fusion sum, equal to
// the compulsory bytes once everything fits, and provable <= attainable; groups partition the
// ops and shares sum to the traffic.
void check_invariants(const std::string& text, int iter) {
  {
    SCOPED_TRACE(text);
    Analyzed a(text);
    GraphCurveOptions o;
    o.max_segment_ops = 1 + iter % 4;  // short limits exercise the whole-graph segment
    GraphCurveOptions nf;
    nf.fuse = false;
    GraphTrafficModel m(a.g, a.c, o), unfused(a.g, a.c, nf);
    Count prev;
    bool first = true;
    for (Count s : capacities()) {
      const GraphTraffic q = m.at(s, TrafficMode::Attainable);
      const GraphTraffic p = m.at(s, TrafficMode::Provable);
      EXPECT_GE(q.traffic_bytes, a.c.compulsory_bytes());
      EXPECT_LE(q.traffic_bytes, unfused.at(s, TrafficMode::Attainable).traffic_bytes);
      if (!first) {
        EXPECT_LE(q.traffic_bytes, prev) << "at " << s.str();
      }
      EXPECT_LE(p.traffic_bytes, q.traffic_bytes);
      // Not by the clamp: a lower bound above an attained value would be a model bug.
      EXPECT_EQ(p.detail.find("clamped"), std::string::npos) << p.detail << " at " << s.str();
      EXPECT_GE(p.traffic_bytes, a.c.compulsory_bytes());
      Count sum;
      std::size_t grouped = 0;
      for (const FusionGroup& grp : q.groups) {
        grouped += grp.ops.size();
        EXPECT_LE(grp.buffer_bytes, s);
      }
      for (Count c : q.op_traffic_bytes) sum += c;
      EXPECT_EQ(sum, q.traffic_bytes);
      std::size_t units = 0;
      for (const cost::Work& w : a.c.per_op)
        units += w.analyzed && !w.dead && w.bytes() > Count(0);
      EXPECT_EQ(grouped, units);  // a partition of the live analyzed ops that are not free views
      prev = q.traffic_bytes;
      first = false;
    }
    // Everything fits: the fused compulsory traffic.
    EXPECT_EQ(m.at(Count(kGiB), TrafficMode::Attainable).traffic_bytes, a.c.compulsory_bytes());
  }
}

TEST(FusionProperties, InvariantsOnRandomGraphs) {
  std::mt19937 rng(20261130);
  for (int iter = 0; iter < 200; ++iter) check_invariants(random_graph(rng), iter);
}

// The same with 2:4 and unstructured-sparse inputs and weights: every byte at the cost
// module's storage, so Q(S) still reaches the compulsory bytes exactly.
TEST(FusionProperties, InvariantsOnRandomSparseGraphs) {
  std::mt19937 rng(424242);
  for (int iter = 0; iter < 150; ++iter) check_invariants(random_graph(rng, true), iter);
}

// One search for many capacities gives, capacity by capacity, what a fresh model answers
// for each alone: traffic, groups (ops, kind, traffic, detail) and per-op shares, in both
// modes; and the batch leaves the one-capacity queries unchanged.
TEST(FusionProperties, BatchedCapacitiesMatchOneAtATime) {
  std::mt19937 rng(31);
  const std::vector<Count> caps = capacities();
  for (int iter = 0; iter < 25; ++iter) {
    const std::string text = random_graph(rng);
    SCOPED_TRACE(text);
    Analyzed a(text);
    GraphCurveOptions o;
    o.max_segment_ops = 1 + iter % 3;
    for (TrafficMode mode : {TrafficMode::Attainable, TrafficMode::Provable}) {
      GraphTrafficModel batched(a.g, a.c, o);
      const std::vector<GraphTraffic> all = batched.at(caps, mode);
      ASSERT_EQ(all.size(), caps.size());
      for (std::size_t k = 0; k < caps.size(); ++k) {
        GraphTrafficModel alone(a.g, a.c, o);
        for (const GraphTraffic& q : {alone.at(caps[k], mode), batched.at(caps[k], mode)}) {
          EXPECT_EQ(all[k].capacity_bytes, caps[k]);
          EXPECT_EQ(all[k].traffic_bytes, q.traffic_bytes) << "at " << caps[k].str();
          EXPECT_EQ(all[k].op_traffic_bytes, q.op_traffic_bytes);
          EXPECT_EQ(all[k].detail, q.detail);
          ASSERT_EQ(all[k].groups.size(), q.groups.size());
          for (std::size_t i = 0; i < q.groups.size(); ++i) {
            EXPECT_EQ(all[k].groups[i].ops, q.groups[i].ops);
            EXPECT_EQ(all[k].groups[i].kind, q.groups[i].kind);
            EXPECT_EQ(all[k].groups[i].traffic_bytes, q.groups[i].traffic_bytes);
            EXPECT_EQ(all[k].groups[i].detail, q.groups[i].detail);
          }
        }
      }
    }
  }
}

// The segmentation search against all 2^(n-1) segmentations of the units, each segment at
// its best strategy (group_at), on small random graphs.
TEST(FusionProperties, SegmentationSearchMatchesBruteForce) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 40; ++iter) {
    const std::string text = random_graph(rng);
    SCOPED_TRACE(text);
    Analyzed a(text);
    std::vector<ir::OpId> units;
    for (const ir::Op& op : a.g.ops())
      if (a.c.per_op[op.id.value].analyzed && !a.c.per_op[op.id.value].dead &&
          a.c.per_op[op.id.value].bytes() > Count(0))
        units.push_back(op.id);
    const int n = static_cast<int>(units.size());
    if (n > 8) continue;
    GraphCurveOptions o;
    o.max_segment_ops = n;
    GraphTrafficModel m(a.g, a.c, o);
    for (Count s : {Count(64), Count(1024), Count(16 * 1024), Count(kMiB)}) {
      auto best = [&](int i, int j) -> std::optional<Count> {  // units [i, j)
        std::optional<Count> b;
        for (FusionKind k : {FusionKind::None, FusionKind::Untiled, FusionKind::Tiled}) {
          if (k == FusionKind::None && j - i != 1) continue;
          std::optional<FusionGroup> grp = m.group_at(units[i], units[j - 1], k, s);
          if (grp && (!b || grp->traffic_bytes < *b)) b = grp->traffic_bytes;
        }
        return b;
      };
      std::optional<Count> brute;
      for (std::uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
        Count total;
        bool ok = true;
        int start = 0;
        for (int j = 1; j <= n && ok; ++j)
          if (j == n || (cuts & (1u << (j - 1)))) {
            std::optional<Count> b = best(start, j);
            ok = b.has_value();
            if (ok) total += *b;
            start = j;
          }
        if (ok && (!brute || total < *brute)) brute = total;
      }
      ASSERT_TRUE(brute.has_value());
      EXPECT_EQ(m.at(s, TrafficMode::Attainable).traffic_bytes,
                std::max(*brute, a.c.compulsory_bytes()))
          << "at " << s.str();
    }
  }
}

// A model whose layers repeat: `layers` blocks of a normalization (a row reduction and a
// scale), a matmul, an activation, a transpose that copies or a flat view read at strides,
// a second matmul and a residual add, each with weights of its own, at random sizes and
// dtypes; a layer's residual is now and then its normalized input instead of its input.
// With `outputs`, a layer's intermediates are graph outputs now and then, or read again
// after the last layer, so that some layers differ from the others in what is needed
// outside them.
std::string layered_graph(std::mt19937& rng, int layers, bool outputs) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* types[] = {"f32", "bf16"};
  const int r = uni(2, 24), c = uni(1, 6) * 2, f = uni(1, 8) * 2;
  const std::string t = types[uni(0, 1)];
  const bool flat = uni(0, 1) == 1;
  std::string text = fmt::format("x = {}[{},{}] input\n", t, r, c);
  std::string prev = "x";
  for (int l = 0; l < layers; ++l) {
    auto mark = [&](bool last) {
      return last ? std::string("{output}") : (outputs && uni(0, 5) == 0 ? "{output}" : "");
    };
    const std::string p = fmt::format("l{}_", l);
    text += fmt::format("{0}wa = {1}[{2},{3}] weight\n{0}wb = {1}[{3},{2}] weight\n", p, t, c, f);
    text += fmt::format("{0}n = {1}[{2}] einsum [r,c] sum mul($0,$0) ({3}[r,c]) -> [r]\n", p, t,
                        r, prev);
    text += fmt::format("{0}h = {1}[{2},{3}]{4} einsum [r,c] none mul($0,$1) ({5}[r,c], {0}n[r]) "
                        "-> [r,c]\n", p, t, r, c, mark(false), prev);
    text += fmt::format("{0}a = {1}[{2},{3}] einsum \"rc,cf->rf\" ({0}h, {0}wa)\n", p, t, r, f);
    text += fmt::format("{0}g = {1}[{2},{3}]{4} einsum [r,f] none exp($0) ({0}a[r,f]) -> [r,f]\n",
                        p, t, r, f, mark(false));
    if (flat) {  // a transpose and back, as torch lowers permuted views
      text += fmt::format("{0}gf = {1}[{2}] move view ({0}g)\n", p, t, r * f);
      text += fmt::format("{0}gt = {1}[{2},{3}] einsum [a={2},b={3}] none $0 ({0}gf[b*{2}+a]) -> "
                          "[a,b]\n", p, t, f, r);
    } else {
      text += fmt::format("{0}gt = {1}[{2},{3}] move permute {{perm=[1,0]}} ({0}g)\n", p, t, f, r);
    }
    text += fmt::format("{0}b = {1}[{2},{3}] einsum \"fr,fc->rc\" ({0}gt, {0}wb)\n", p, t, r, c);
    const bool last = l + 1 == layers;
    // The residual: the layer's input, or now and then its normalized input (the same
    // shapes and ops, other tensors: layers alike but for what reads what).
    const std::string skip = uni(0, 3) == 0 ? p + "h" : prev;
    text += fmt::format("{0}o = {1}[{2},{3}]{4} einsum [r,c] none add($0,$1) ({5}[r,c], {0}b[r,c]) "
                        "-> [r,c]\n", p, t, r, c, mark(last), skip);
    prev = p + "o";
  }
  for (int l = 0; l < layers && outputs; ++l)
    if (uni(0, 2) == 0)  // an activation read again at the end (a probe, an auxiliary loss)
      text += fmt::format("l{0}_probe = {1}[{2}]{{output}} einsum [r,f] sum $0 (l{0}_g[r,f]) -> "
                          "[r]\n", l, t, r);
  return text;
}

// Segments priced once per structure (memo_segments) give what pricing each segment on its
// own gives: traffic, per-op shares, groups and details at every capacity, on models whose
// layers repeat (some of them with outputs of their own) and on random graphs.
TEST(FusionProperties, SegmentsPricedOncePerStructureMatchEachPricedAlone) {
  std::mt19937 rng(2026);
  const std::vector<Count> caps = capacities();
  for (int iter = 0; iter < 60; ++iter) {
    const std::string text = iter < 40 ? layered_graph(rng, 2 + iter % 5, iter % 2 == 1)
                                       : random_graph(rng, iter % 4 == 0);
    SCOPED_TRACE(text);
    Analyzed a(text);
    GraphCurveOptions memo, alone;
    memo.max_segment_ops = alone.max_segment_ops = 2 + iter % 7;
    alone.memo_segments = false;
    const std::vector<GraphTraffic> x = GraphTrafficModel(a.g, a.c, memo)
                                            .at(caps, TrafficMode::Attainable);
    const std::vector<GraphTraffic> y = GraphTrafficModel(a.g, a.c, alone)
                                            .at(caps, TrafficMode::Attainable);
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t k = 0; k < caps.size(); ++k) {
      EXPECT_EQ(x[k].traffic_bytes, y[k].traffic_bytes) << "at " << caps[k].str();
      EXPECT_EQ(x[k].op_traffic_bytes, y[k].op_traffic_bytes);
      EXPECT_EQ(x[k].detail, y[k].detail);
      ASSERT_EQ(x[k].groups.size(), y[k].groups.size());
      for (std::size_t i = 0; i < x[k].groups.size(); ++i) {
        EXPECT_EQ(x[k].groups[i].ops, y[k].groups[i].ops);
        EXPECT_EQ(x[k].groups[i].kind, y[k].groups[i].kind);
        EXPECT_EQ(x[k].groups[i].traffic_bytes, y[k].groups[i].traffic_bytes);
        EXPECT_EQ(x[k].groups[i].detail, y[k].groups[i].detail);
      }
    }
  }
}

}  // namespace
}  // namespace solar::tiling
