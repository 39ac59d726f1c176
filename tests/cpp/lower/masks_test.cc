#include "solar/lower/masks.h"

#include <algorithm>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "solar/cost/work.h"
#include "solar/ir/text.h"
#include "solar/ir/verify.h"
#include "solar/lower/aten.h"
#include "solar/lower/optrace.h"

namespace solar::lower {
namespace {

// B=2, H=3 (merged into 6 for the batched matmuls), S=8, D=4.
constexpr std::int64_t kB = 2, kH = 3, kS = 8, kD = 4;
constexpr std::int64_t kCausal = kS * (kS + 1) / 2;  // (query, key) pairs with key <= query

const ir::Op& op_named(const ir::Graph& g, const std::string& name) {
  for (const ir::Op& op : g.ops())
    if (op.name == name) return op;
  throw std::runtime_error("no op " + name);
}

Count live(const ir::Graph& g, const std::string& name) {
  return cost::live_points(op_named(g, name).einsum());
}

bool masked(const ir::Graph& g, const std::string& name) {
  return !op_named(g, name).einsum().mask.empty();
}

bool listed(const ir::Graph& g, const std::vector<ir::OpId>& ops, const std::string& name) {
  return std::any_of(ops.begin(), ops.end(), [&](ir::OpId id) { return g.op(id).name == name; });
}

// A manual causal attention as the aten table lowers it: scores = QK^T (a bmm over the
// merged batch), / sqrt(D), masked_fill(triu(ones, 1).bool(), -inf), softmax (max,
// exp(x - max), sum, div), then P V.
std::string manual_attention(const std::string& fill_mask, const std::string& fill_value,
                             const std::string& output_scores = "") {
  return R"(
    q = f32[6,8,4] input
    k = f32[6,8,4] input
    v = f32[6,8,4] input
    s = f32[6,8,8])" + output_scores + R"( einsum [b=6,m=8,n=8,e=4] sum mul($0,$1) (q[b,m,e], k[b,n,e]) -> [b,m,n]
    s4 = f32[2,3,8,8] move view (s)
    x = f32[2,3,8,8] einsum [i0=2,i1=3,i2=8,i3=8] none div($0,2) (s4[i0,i1,i2,i3]) -> [i0,i1,i2,i3]
    ones = f32[8,8] einsum [i0=8,i1=8] none 1 () -> [i0,i1]
    tri = f32[8,8] einsum [i0=8,i1=8] none $0 (ones[i0,i1]) -> [i0,i1] where )" + fill_mask + R"(
    m = bool[8,8] move cast (tri)
    y = f32[2,3,8,8] einsum [i0=2,i1=3,i2=8,i3=8] none select($1,)" + fill_value + R"(,$0) (x[i0,i1,i2,i3], m[i2,i3]) -> [i0,i1,i2,i3]
    mx = f32[2,3,8,1] einsum [i0=2,i1=3,i2=8,r3=8] max $0 (y[i0,i1,i2,r3]) -> [i0,i1,i2,0]
    ex = f32[2,3,8,8] einsum [i0=2,i1=3,i2=8,i3=8] none exp(sub($0,$1)) (y[i0,i1,i2,i3], mx[i0,i1,i2,0]) -> [i0,i1,i2,i3]
    sm = f32[2,3,8,1] einsum [i0=2,i1=3,i2=8,r3=8] sum $0 (ex[i0,i1,i2,r3]) -> [i0,i1,i2,0]
    p = f32[2,3,8,8] einsum [i0=2,i1=3,i2=8,i3=8] none div($0,$1) (ex[i0,i1,i2,i3], sm[i0,i1,i2,0]) -> [i0,i1,i2,i3]
    p3 = f32[6,8,8] move view (p)
    o = f32[6,8,4]{output} einsum [b=6,m=8,k=8,n=4] sum mul($0,$1) (p3[b,m,k], v[b,k,n]) -> [b,m,n])";
}

TEST(Masks, ManualCausalAttentionMasksBothContractions) {
  ir::Graph g = ir::parse_graph(manual_attention("i1 - i0 - 1 >= 0", "-inf"));
  MaskRecognition r = recognize_masks(g);
  ir::verify(g);
  // Mask-aware: B*H*S*(S+1)/2*D per contraction (dense: B*H*S*S*D).
  EXPECT_EQ(live(g, "s"), Count(kB * kH * kCausal * kD));
  EXPECT_EQ(live(g, "o"), Count(kB * kH * kCausal * kD));
  // Forward: -inf under the max, exp(-inf - max) = 0, 0 / sum = 0, 0 * v = 0.
  for (const char* name : {"mx", "ex", "sm", "p", "o"}) EXPECT_TRUE(listed(g, r.forward, name)) << name;
  // Backward: the masked fill never reads the scores above the diagonal.
  for (const char* name : {"y", "x", "s"}) EXPECT_TRUE(listed(g, r.backward, name)) << name;
  // The mask's own construction is left as written.
  EXPECT_EQ(op_named(g, "tri").einsum().mask.size(), 1u);
  EXPECT_EQ(live(g, "ex"), Count(kB * kH * kCausal));
  // Only the scores' tensors change (at points nothing reads); never the output.
  for (ir::TensorId t : r.changed) {
    const std::string& n = g.tensor(t).name;
    EXPECT_TRUE(n == "s" || n == "s4" || n == "x" || n == "y") << n;
  }
}

TEST(Masks, TrilOfOnesComparedWithZeroIsTheSameMask) {
  // masked_fill(tril(ones) == 0, -inf): the fill happens where the lower triangle is 0.
  ir::Graph g = ir::parse_graph(R"(
    q = f32[8,4] input
    k = f32[8,4] input
    v = f32[8,4] input
    s = f32[8,8] einsum [m=8,n=8,e=4] sum mul($0,$1) (q[m,e], k[n,e]) -> [m,n]
    ones = f32[8,8] einsum [i0=8,i1=8] none 1 () -> [i0,i1]
    tri = f32[8,8] einsum [i0=8,i1=8] none $0 (ones[i0,i1]) -> [i0,i1] where i0 - i1 >= 0
    z = bool[8,8] einsum [i0=8,i1=8] none eq($0,0) (tri[i0,i1]) -> [i0,i1]
    y = f32[8,8] einsum [i0=8,i1=8] none select($1,-inf,$0) (s[i0,i1], z[i0,i1]) -> [i0,i1]
    mx = f32[8] einsum [i0=8,r1=8] max $0 (y[i0,r1]) -> [i0]
    ex = f32[8,8] einsum [i0=8,i1=8] none exp(sub($0,$1)) (y[i0,i1], mx[i0]) -> [i0,i1]
    sm = f32[8] einsum [i0=8,r1=8] sum $0 (ex[i0,r1]) -> [i0]
    p = f32[8,8] einsum [i0=8,i1=8] none div($0,$1) (ex[i0,i1], sm[i0]) -> [i0,i1]
    o = f32[8,4]{output} einsum [m=8,k=8,n=4] sum mul($0,$1) (p[m,k], v[k,n]) -> [m,n])");
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kCausal * kD));  // S*(S+1)/2*D
  EXPECT_EQ(live(g, "o"), Count(kCausal * kD));
}

TEST(Masks, IotaComparisonAsJaxLowersIt) {
  // jnp.tril(ones(bool)) from iota + ge + select_n, then where(mask, s, -inf), softmax with
  // max(-inf, max) and broadcasts, then the P V dot_general.
  ir::Graph g = ir::parse_graph(R"(
    q = f32[2,8,4] input
    k = f32[2,8,4] input
    v = f32[2,8,4] input
    s = f32[2,8,8] einsum [b=2,m=8,n=8,e=4] sum mul($0,$1) (q[b,m,e], k[b,n,e]) -> [b,m,n]
    t = bool[8,8] einsum [i0=8,i1=8] none 1 () -> [i0,i1]
    f = bool[8,8] einsum [i0=8,i1=8] none 0 () -> [i0,i1]
    a0 = i32[8] opaque "arange" {vector_flops=8, special_ops=0, bytes=32, assumption="iota", start=0, step=1} ()
    a1 = i32[8,1] move view (a0)
    rows = i32[8,8] move view (a1)
    rows0 = i32[8,8] einsum [i0=8,i1=8] none add($0,0) (rows[i0,i1]) -> [i0,i1]
    b0 = i32[8] opaque "arange" {vector_flops=8, special_ops=0, bytes=32, assumption="iota", start=0, step=1} ()
    b1 = i32[1,8] move view (b0)
    cols = i32[8,8] move view (b1)
    ge = bool[8,8] einsum [i0=8,i1=8] none ge($0,$1) (rows0[i0,i1], cols[i0,i1]) -> [i0,i1]
    tri = bool[8,8] einsum [i0=8,i1=8] none select($0,$2,$1) (ge[i0,i1], f[i0,i1], t[i0,i1]) -> [i0,i1]
    m = bool[2,8,8] move view (tri)
    ninf = f32[2,8,8] einsum [i0=2,i1=8,i2=8] none -inf () -> [i0,i1,i2]
    y = f32[2,8,8] einsum [i0=2,i1=8,i2=8] none select($0,$2,$1) (m[i0,i1,i2], ninf[i0,i1,i2], s[i0,i1,i2]) -> [i0,i1,i2]
    mx = f32[2,8] einsum [i0=2,i1=8,r2=8] max $0 (y[i0,i1,r2]) -> [i0,i1]
    mx2 = f32[2,8] einsum [i0=2,i1=8] none max(-inf,$0) (mx[i0,i1]) -> [i0,i1]
    mx3 = f32[2,8,1] move view (mx2)
    d = f32[2,8,8] einsum [i0=2,i1=8,i2=8] none sub($0,$1) (y[i0,i1,i2], mx3[i0,i1,0]) -> [i0,i1,i2]
    ex = f32[2,8,8] einsum [i0=2,i1=8,i2=8] none exp($0) (d[i0,i1,i2]) -> [i0,i1,i2]
    sm = f32[2,8] einsum [i0=2,i1=8,r2=8] sum $0 (ex[i0,i1,r2]) -> [i0,i1]
    sm3 = f32[2,8,1] move view (sm)
    p = f32[2,8,8] einsum [i0=2,i1=8,i2=8] none div($0,$1) (ex[i0,i1,i2], sm3[i0,i1,0]) -> [i0,i1,i2]
    o = f32[2,8,4]{output} einsum [b=2,m=8,n=4,k=8] sum mul($0,$1) (p[b,m,k], v[b,k,n]) -> [b,m,n])");
  MaskRecognition r = recognize_masks(g);
  ir::verify(g);
  EXPECT_EQ(live(g, "s"), Count(2 * kCausal * kD));  // B*S*(S+1)/2*D
  EXPECT_EQ(live(g, "o"), Count(2 * kCausal * kD));
  EXPECT_TRUE(listed(g, r.backward, "d"));  // -inf - max is -inf, not 0: masked backward
  EXPECT_FALSE(masked(g, "tri"));          // the mask's construction stays as written
  EXPECT_FALSE(masked(g, "ninf"));
}

TEST(Masks, AdditiveMaskOfMinusInfinity) {
  // scores + full(-inf).triu(1): -inf above the diagonal, 0 on and below it.
  ir::Graph g = ir::parse_graph(R"(
    q = f32[8,4] input
    k = f32[8,4] input
    v = f32[8,4] input
    s = f32[8,8] einsum [m=8,n=8,e=4] sum mul($0,$1) (q[m,e], k[n,e]) -> [m,n]
    full = f32[8,8] einsum [i0=8,i1=8] none -inf () -> [i0,i1]
    bias = f32[8,8] einsum [i0=8,i1=8] none $0 (full[i0,i1]) -> [i0,i1] where i1 - i0 - 1 >= 0
    y = f32[8,8] einsum [i0=8,i1=8] none add($0,$1) (s[i0,i1], bias[i0,i1]) -> [i0,i1]
    mx = f32[8] einsum [i0=8,r1=8] max $0 (y[i0,r1]) -> [i0]
    ex = f32[8,8] einsum [i0=8,i1=8] none exp(sub($0,$1)) (y[i0,i1], mx[i0]) -> [i0,i1]
    sm = f32[8] einsum [i0=8,r1=8] sum $0 (ex[i0,r1]) -> [i0]
    p = f32[8,8] einsum [i0=8,i1=8] none div($0,$1) (ex[i0,i1], sm[i0]) -> [i0,i1]
    o = f32[8,4]{output} einsum [m=8,k=8,n=4] sum mul($0,$1) (p[m,k], v[k,n]) -> [m,n])");
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kCausal * kD));
  EXPECT_EQ(live(g, "o"), Count(kCausal * kD));
}

TEST(Masks, TrilOfAProductAndAProductOfATril) {
  // tril(a @ b): the upper triangle of the product is never read (backward);
  // tril(a) @ b: the zeros of the triangle multiply nothing (forward).
  ir::Graph g = ir::parse_graph(R"(
    a = f32[16,16] input
    b = f32[16,16] input
    ab = f32[16,16] einsum [m=16,n=16,k=16] sum mul($0,$1) (a[m,k], b[k,n]) -> [m,n]
    lo = f32[16,16]{output} einsum [i0=16,i1=16] none $0 (ab[i0,i1]) -> [i0,i1] where i0 - i1 >= 0
    la = f32[16,16] einsum [i0=16,i1=16] none $0 (a[i0,i1]) -> [i0,i1] where i0 - i1 >= 0
    c = f32[16,16]{output} einsum [m=16,n=16,k=16] sum mul($0,$1) (la[m,k], b[k,n]) -> [m,n])");
  MaskRecognition r = recognize_masks(g);
  EXPECT_EQ(live(g, "ab"), Count(16 * 17 / 2 * 16));  // lower triangle of M x N, times K
  EXPECT_EQ(live(g, "c"), Count(16 * 17 / 2 * 16));   // lower triangle of M x K, times N
  EXPECT_TRUE(listed(g, r.backward, "ab"));
  EXPECT_TRUE(listed(g, r.forward, "c"));
}

TEST(Masks, WhereOnAnArangeComparison) {
  // torch.where(arange(S)[:, None] >= arange(S)[None, :], s, -inf) with torch's float arange
  // and slice/unsqueeze views.
  ir::Graph g = ir::parse_graph(R"(
    q = f32[8,4] input
    k = f32[8,4] input
    v = f32[8,4] input
    s = f32[8,8] einsum [m=8,n=8,e=4] sum mul($0,$1) (q[m,e], k[n,e]) -> [m,n]
    i = f32[8] opaque "arange" {vector_flops=8, special_ops=0, bytes=32, assumption="arange", start=0, step=1} ()
    i2 = f32[8] move slice {starts=[0], ends=[8], steps=[1]} (i)
    r = f32[8,1] move view (i2)
    c = f32[1,8] move view (i)
    m = bool[8,8] einsum [i0=8,i1=8] none ge($0,$1) (r[i0,0], c[0,i1]) -> [i0,i1]
    y = f32[8,8] einsum [i0=8,i1=8] none select($0,$1,-inf) (m[i0,i1], s[i0,i1]) -> [i0,i1]
    mx = f32[8] einsum [i0=8,r1=8] max $0 (y[i0,r1]) -> [i0]
    ex = f32[8,8] einsum [i0=8,i1=8] none exp(sub($0,$1)) (y[i0,i1], mx[i0]) -> [i0,i1]
    sm = f32[8] einsum [i0=8,r1=8] sum $0 (ex[i0,r1]) -> [i0]
    p = f32[8,8] einsum [i0=8,i1=8] none div($0,$1) (ex[i0,i1], sm[i0]) -> [i0,i1]
    o = f32[8,4]{output} einsum [m=8,k=8,n=4] sum mul($0,$1) (p[m,k], v[k,n]) -> [m,n])");
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kCausal * kD));
  EXPECT_EQ(live(g, "o"), Count(kCausal * kD));
}

TEST(Masks, BandedMaskIsTwoConstraints) {
  // A sliding window of 3 keys: masked_fill where key > query or key <= query - 3.
  ir::Graph g = ir::parse_graph(R"(
    q = f32[8,4] input
    k = f32[8,4] input
    v = f32[8,4] input
    s = f32[8,8] einsum [m=8,n=8,e=4] sum mul($0,$1) (q[m,e], k[n,e]) -> [m,n]
    i = i64[8] opaque "arange" {vector_flops=8, special_ops=0, bytes=64, assumption="arange", start=0, step=1} ()
    r = i64[8,1] move view (i)
    c = i64[1,8] move view (i)
    up = bool[8,8] einsum [i0=8,i1=8] none gt($1,$0) (r[i0,0], c[0,i1]) -> [i0,i1]
    d = i64[8,8] einsum [i0=8,i1=8] none sub($0,$1) (r[i0,0], c[0,i1]) -> [i0,i1]
    far = bool[8,8] einsum [i0=8,i1=8] none ge($0,3) (d[i0,i1]) -> [i0,i1]
    y1 = f32[8,8] einsum [i0=8,i1=8] none select($1,-inf,$0) (s[i0,i1], up[i0,i1]) -> [i0,i1]
    y = f32[8,8] einsum [i0=8,i1=8] none select($1,-inf,$0) (y1[i0,i1], far[i0,i1]) -> [i0,i1]
    mx = f32[8] einsum [i0=8,r1=8] max $0 (y[i0,r1]) -> [i0]
    ex = f32[8,8] einsum [i0=8,i1=8] none exp(sub($0,$1)) (y[i0,i1], mx[i0]) -> [i0,i1]
    sm = f32[8] einsum [i0=8,r1=8] sum $0 (ex[i0,r1]) -> [i0]
    p = f32[8,8] einsum [i0=8,i1=8] none div($0,$1) (ex[i0,i1], sm[i0]) -> [i0,i1]
    o = f32[8,4]{output} einsum [m=8,k=8,n=4] sum mul($0,$1) (p[m,k], v[k,n]) -> [m,n])");
  recognize_masks(g);
  // The second fill is recognized on top of the first's -inf: query - 2 <= key <= query.
  // Pairs: 1 + 2 + 3*6 = 21 per head.
  EXPECT_EQ(live(g, "o"), Count(21 * kD));
  EXPECT_EQ(live(g, "s"), Count(21 * kD));
}

// A sliding window of W keys over T queries, key in (query - W, query]: the live pairs are
// sum over q of min(q + 1, W) = W*T - W*(W-1)/2 when T >= W.
constexpr std::int64_t kT = 8, kW = 3;
constexpr std::int64_t kBand = kW * kT - kW * (kW - 1) / 2;

// Scores, a keep mask `keep` over [8,8] (defined by `mask_ops`), where(keep, s, fill),
// softmax, P V.
std::string band_attention(const std::string& mask_ops, const std::string& fill) {
  return R"(
    q = f32[8,4] input
    k = f32[8,4] input
    v = f32[8,4] input
    s = f32[8,8] einsum [m=8,n=8,e=4] sum mul($0,$1) (q[m,e], k[n,e]) -> [m,n])" + mask_ops + R"(
    y = f32[8,8] einsum [i0=8,i1=8] none select($1,$0,)" + fill + R"() (s[i0,i1], keep[i0,i1]) -> [i0,i1]
    mx = f32[8] einsum [i0=8,r1=8] max $0 (y[i0,r1]) -> [i0]
    ex = f32[8,8] einsum [i0=8,i1=8] none exp(sub($0,$1)) (y[i0,i1], mx[i0]) -> [i0,i1]
    sm = f32[8] einsum [i0=8,r1=8] sum $0 (ex[i0,r1]) -> [i0]
    p = f32[8,8] einsum [i0=8,i1=8] none div($0,$1) (ex[i0,i1], sm[i0]) -> [i0,i1]
    o = f32[8,4]{output} einsum [m=8,k=8,n=4] sum mul($0,$1) (p[m,k], v[k,n]) -> [m,n])";
}

TEST(Masks, AConjunctionOfTwoComparisonsIsABand) {
  // keep = (key <= query) & (key > query - 3): the `and` is masked by its first comparison,
  // and its value is known on both sides of the pair of constraints.
  ir::Graph g = ir::parse_graph(band_attention(R"(
    i = i64[8] opaque "arange" {vector_flops=8, special_ops=0, bytes=64, assumption="arange", start=0, step=1} ()
    r = i64[8,1] move view (i)
    c = i64[1,8] move view (i)
    le = bool[8,8] einsum [i0=8,i1=8] none le($1,$0) (r[i0,0], c[0,i1]) -> [i0,i1]
    lo = i64[8,1] einsum [i0=8,i1=1] none sub($0,3) (r[i0,i1]) -> [i0,i1]
    gt = bool[8,8] einsum [i0=8,i1=8] none gt($1,$0) (lo[i0,0], c[0,i1]) -> [i0,i1]
    keep = bool[8,8] einsum [i0=8,i1=8] none mul(ne($0,0),ne($1,0)) (le[i0,i1], gt[i0,i1]) -> [i0,i1])",
                                                "-inf"));
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kBand * kD));
  EXPECT_EQ(live(g, "o"), Count(kBand * kD));
}

TEST(Masks, AWindowWiderThanTheKeysLeavesTheCausalHalf) {
  // keep = (key <= query) & (key > query - 64) over 8 keys: the window's comparison holds on
  // the whole box (a constant 1), so the conjunction is the causal mask.
  ir::Graph g = ir::parse_graph(band_attention(R"(
    i = i64[8] opaque "arange" {vector_flops=8, special_ops=0, bytes=64, assumption="arange", start=0, step=1} ()
    r = i64[8,1] move view (i)
    c = i64[1,8] move view (i)
    le = bool[8,8] einsum [i0=8,i1=8] none le($1,$0) (r[i0,0], c[0,i1]) -> [i0,i1]
    lo = i64[8,1] einsum [i0=8,i1=1] none sub($0,64) (r[i0,i1]) -> [i0,i1]
    gt = bool[8,8] einsum [i0=8,i1=8] none gt($1,$0) (lo[i0,0], c[0,i1]) -> [i0,i1]
    keep = bool[8,8] einsum [i0=8,i1=8] none mul(ne($0,0),ne($1,0)) (le[i0,i1], gt[i0,i1]) -> [i0,i1])",
                                                "-inf"));
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kCausal * kD));
  EXPECT_EQ(live(g, "o"), Count(kCausal * kD));
}

TEST(Masks, JaxsAndOfBoolsIsAMinimum) {
  // jnp's `&` on bools lowers to min: min(0, x) is 0 for a truth value x.
  ir::Graph g = ir::parse_graph(band_attention(R"(
    i = i32[8] opaque "arange" {vector_flops=8, special_ops=0, bytes=32, assumption="iota", start=0, step=1} ()
    r = i32[8,1] move view (i)
    c = i32[1,8] move view (i)
    le = bool[8,8] einsum [i0=8,i1=8] none le($0,$1) (c[0,i1], r[i0,0]) -> [i0,i1]
    lo = i32[8,1] einsum [i0=8,i1=1] none sub($0,3) (r[i0,i1]) -> [i0,i1]
    gt = bool[8,8] einsum [i0=8,i1=8] none gt($0,$1) (c[0,i1], lo[i0,0]) -> [i0,i1]
    keep = bool[8,8] einsum [i0=8,i1=8] none min($0,$1) (le[i0,i1], gt[i0,i1]) -> [i0,i1])",
                                                "-inf"));
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kBand * kD));
  EXPECT_EQ(live(g, "o"), Count(kBand * kD));
}

TEST(Masks, AProductOfTrilAndTriuIsABand) {
  // keep = tril(ones, 0) * triu(ones, -W + 1), compared with 0.
  ir::Graph g = ir::parse_graph(band_attention(R"(
    ones = f32[8,8] einsum [i0=8,i1=8] none 1 () -> [i0,i1]
    lower = f32[8,8] einsum [i0=8,i1=8] none $0 (ones[i0,i1]) -> [i0,i1] where i0 - i1 >= 0
    upper = f32[8,8] einsum [i0=8,i1=8] none $0 (ones[i0,i1]) -> [i0,i1] where i1 - i0 + 2 >= 0
    both = f32[8,8] einsum [i0=8,i1=8] none mul($0,$1) (lower[i0,i1], upper[i0,i1]) -> [i0,i1]
    keep = bool[8,8] einsum [i0=8,i1=8] none ne($0,0) (both[i0,i1]) -> [i0,i1])",
                                                "-inf"));
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kBand * kD));
  EXPECT_EQ(live(g, "o"), Count(kBand * kD));
}

TEST(Masks, AMaskConstantMakesTheProbabilitiesDeadAsMinusInfinityDoes) {
  // where(tril, s, finfo(f32).min * 0.7), as jax.nn.dot_product_attention writes it: exp of
  // the fill minus a row's max is 0 (the data is far below the constant), so the softmax and
  // P V are masked forward, and the scores backward.
  const std::string tril = R"(
    ones = f32[8,8] einsum [i0=8,i1=8] none 1 () -> [i0,i1]
    keep = f32[8,8] einsum [i0=8,i1=8] none $0 (ones[i0,i1]) -> [i0,i1] where i0 - i1 >= 0)";
  ir::Graph g = ir::parse_graph(band_attention(tril, "-2.381976325057654e+38"));
  MaskRecognition r = recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kS * (kS + 1) / 2 * kD));  // key <= query
  EXPECT_EQ(live(g, "o"), Count(kS * (kS + 1) / 2 * kD));
  EXPECT_TRUE(listed(g, r.forward, "ex"));
  EXPECT_TRUE(listed(g, r.forward, "o"));
  // A fill of -1e9 is data-sized: exp(-1e9 - max) is 0 only for some data.
  ir::Graph small = ir::parse_graph(band_attention(tril, "-1000000000"));
  recognize_masks(small);
  EXPECT_EQ(live(small, "o"), Count(kS * kS * kD));
}

TEST(Masks, ABf16FillStaysAFillThroughTheUpcastToF32) {
  // transformers' eager attention (Gemma-2's): a bf16 additive mask of 0 and finfo(bf16).min
  // added to the scores, cast to f32 for the softmax. bf16 -> f32 is exact, so the fill is
  // still a fill after the cast and both contractions count key <= query.
  ir::Graph g = ir::parse_graph(R"(
    q = bf16[6,8,4] input
    k = bf16[6,8,4] input
    v = bf16[6,8,4] input
    s = bf16[6,8,8] einsum [b=6,m=8,n=8,e=4] sum mul($0,$1) (q[b,m,e], k[b,n,e]) -> [b,m,n]
    s4 = bf16[2,3,8,8] move view (s)
    ones = bool[8,8] einsum [i0=8,i1=8] none 1 () -> [i0,i1]
    keep = bool[8,8] einsum [i0=8,i1=8] none $0 (ones[i0,i1]) -> [i0,i1] where i0 - i1 >= 0
    zero = bf16[] einsum [] none 0 () -> []
    fill = bf16[] einsum [] none -3.3895313892515355e+38 () -> []
    bias = bf16[8,8] einsum [i0=8,i1=8] none select($0,$1,$2) (keep[i0,i1], zero[], fill[]) -> [i0,i1]
    y = bf16[2,3,8,8] einsum [i0=2,i1=3,i2=8,i3=8] none add($0,$1) (s4[i0,i1,i2,i3], bias[i2,i3]) -> [i0,i1,i2,i3]
    y32 = f32[2,3,8,8] move cast (y)
    mx = f32[2,3,8,1] einsum [i0=2,i1=3,i2=8,r3=8] max $0 (y32[i0,i1,i2,r3]) -> [i0,i1,i2,0]
    ex = f32[2,3,8,8] einsum [i0=2,i1=3,i2=8,i3=8] none exp(sub($0,$1)) (y32[i0,i1,i2,i3], mx[i0,i1,i2,0]) -> [i0,i1,i2,i3]
    sm = f32[2,3,8,1] einsum [i0=2,i1=3,i2=8,r3=8] sum $0 (ex[i0,i1,i2,r3]) -> [i0,i1,i2,0]
    p = f32[2,3,8,8] einsum [i0=2,i1=3,i2=8,i3=8] none div($0,$1) (ex[i0,i1,i2,i3], sm[i0,i1,i2,0]) -> [i0,i1,i2,i3]
    p16 = bf16[2,3,8,8] move cast (p)
    p3 = bf16[6,8,8] move view (p16)
    o = bf16[6,8,4]{output} einsum [b=6,m=8,k=8,n=4] sum mul($0,$1) (p3[b,m,k], v[b,k,n]) -> [b,m,n])");
  recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kB * kH * kCausal * kD));
  EXPECT_EQ(live(g, "o"), Count(kB * kH * kCausal * kD));
}

TEST(Masks, ACausalMaskAndAnInputMaskKeepTheCausalHalf) {
  // keep = tril & pad (pad a program input): keep is 0 above the diagonal whatever pad
  // holds, so the scores there are never read. A row pad empties has no live key: its
  // softmax is NaN with -inf, uniform with a mask constant (exp(c - c) = 1 at every key), so
  // P V stays whole in both.
  const std::string mask = R"(
    pad = bool[8,8] input
    ones = bool[8,8] einsum [i0=8,i1=8] none 1 () -> [i0,i1]
    tri = bool[8,8] einsum [i0=8,i1=8] none $0 (ones[i0,i1]) -> [i0,i1] where i0 - i1 >= 0
    keep = bool[8,8] einsum [i0=8,i1=8] none min($0,$1) (tri[i0,i1], pad[i0,i1]) -> [i0,i1])";
  for (const char* fill : {"-inf", "-3.4028234663852886e+38"}) {
    ir::Graph g = ir::parse_graph(band_attention(mask, fill));
    recognize_masks(g);
    EXPECT_EQ(live(g, "s"), Count(kS * (kS + 1) / 2 * kD)) << fill;  // key <= query
    EXPECT_EQ(live(g, "o"), Count(kS * kS * kD)) << fill;
  }
}

TEST(Masks, AKnownBufferIsAsStructuralAsABuiltMask) {
  // The mask is a weight (a module's buffer) whose values the frontend read: 1 on
  // -2 <= c - r <= 0 over its two dimensions, 0 elsewhere.
  const std::string text = band_attention(R"(
    bias = f32[8,8] weight
    keep = bool[8,8] einsum [i0=8,i1=8] none ne($0,0) (bias[i0,i1]) -> [i0,i1])", "-inf");
  ir::Graph unknown = ir::parse_graph(text);
  recognize_masks(unknown);
  EXPECT_EQ(live(unknown, "o"), Count(kS * kS * kD));  // its values unknown: every point
  ir::Graph g = ir::parse_graph(text);
  const ir::TensorId bias = *g.find_tensor("bias");
  // c - r + 2 >= 0 and -(c - r) >= 0, over (r, c) = (d0, d1).
  const ir::Region band = {{ir::AffineExpr::make({{1, 1}, {0, -1}}, 2)},
                           {ir::AffineExpr::make({{1, -1}, {0, 1}}, 0)}};
  recognize_masks(g, {KnownValues{bias, band, 1, 0}});
  EXPECT_EQ(live(g, "s"), Count(kBand * kD));
  EXPECT_EQ(live(g, "o"), Count(kBand * kD));
}

TEST(Masks, RowsWithoutALiveKeyKeepTheirWork) {
  // triu(ones, 0) fills the diagonal too: query 0 has no live key, so its softmax row is NaN
  // in the program. The max is still exact over the live keys (-inf is its identity), but
  // exp(-inf - max) is NaN there, not 0: exp, the sum, P and P V stay whole. The scores that
  // the fill overwrites are dead all the same: QK^T keeps the strictly lower triangle.
  ir::Graph g = ir::parse_graph(manual_attention("i1 - i0 >= 0", "-inf"));
  recognize_masks(g);
  EXPECT_TRUE(masked(g, "mx"));
  EXPECT_FALSE(masked(g, "ex"));
  EXPECT_FALSE(masked(g, "o"));
  EXPECT_EQ(live(g, "o"), Count(kB * kH * kS * kS * kD));
  EXPECT_EQ(live(g, "s"), Count(kB * kH * (kS * (kS - 1) / 2) * kD));
}

TEST(Masks, FiniteFillValuesMakeOnlyTheFilledScoresDead) {
  // masked_fill(mask, -1e9): exp(-1e9 - max) is 0 only for some data, so the softmax and P V
  // stay whole; the scores the fill overwrites are still never read.
  ir::Graph g = ir::parse_graph(manual_attention("i1 - i0 - 1 >= 0", "-1000000000"));
  MaskRecognition r = recognize_masks(g);
  EXPECT_TRUE(r.forward.empty());
  EXPECT_EQ(live(g, "o"), Count(kB * kH * kS * kS * kD));
  EXPECT_EQ(live(g, "s"), Count(kB * kH * kCausal * kD));
  EXPECT_FALSE(masked(g, "y"));  // its fill is observed
}

TEST(Masks, AMaskThatIsAnInputIsNotStructural) {
  ir::Graph g = ir::parse_graph(R"(
    s = f32[8,8] input
    m = bool[8,8] input
    v = f32[8,4] input
    y = f32[8,8] einsum [i0=8,i1=8] none select($1,-inf,$0) (s[i0,i1], m[i0,i1]) -> [i0,i1]
    mx = f32[8] einsum [i0=8,r1=8] max $0 (y[i0,r1]) -> [i0]
    o = f32[8,4]{output} einsum [m=8,k=8,n=4] sum mul($0,$1) (y[m,k], v[k,n]) -> [m,n])");
  MaskRecognition r = recognize_masks(g);
  EXPECT_TRUE(r.forward.empty());
  EXPECT_TRUE(r.backward.empty());
}

TEST(Masks, ScoresThatAreAnOutputKeepEveryValue) {
  // The scores are returned: every one of them is observed, so QK^T stays whole, while the
  // softmax and P V are still masked (their values do not change).
  ir::Graph g = ir::parse_graph(manual_attention("i1 - i0 - 1 >= 0", "-inf", "{output}"));
  MaskRecognition r = recognize_masks(g);
  EXPECT_EQ(live(g, "s"), Count(kB * kH * kS * kS * kD));
  EXPECT_EQ(live(g, "o"), Count(kB * kH * kCausal * kD));
  EXPECT_FALSE(listed(g, r.backward, "s"));
}

TEST(Masks, GraphsWithoutStructureAreUntouched) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[4,8] input
    b = f32[8,2] weight
    c = f32[4,2]{output} einsum "mk,kn->mn" (a, b))");
  const std::string before = ir::print_graph(g);
  MaskRecognition r = recognize_masks(g);
  EXPECT_TRUE(r.forward.empty() && r.backward.empty() && r.changed.empty());
  EXPECT_EQ(ir::print_graph(g), before);
}

TEST(Masks, AMaskedProgramKeepsItsModuleClasses) {
  // A causal masked_fill inside module "attn" of class Attn, as PyTorch records it: the mask
  // recognition rewrites the graph and keeps every graph-level field, the module classes too.
  const OpTrace t = parse_optrace(R"({
    "schema": "solar.optrace.v1", "name": "causal", "frontend": "torch",
    "modules": {"": "Model", "attn": "Attn"},
    "tensors": [
      {"id": 0, "shape": [1, 8, 4], "dtype": "float32", "role": "input"},
      {"id": 1, "shape": [1, 4, 8], "dtype": "float32", "role": "input"},
      {"id": 2, "shape": [1, 8, 4], "dtype": "float32", "role": "input"},
      {"id": 3, "shape": [1, 8, 8], "dtype": "float32", "role": "intermediate"},
      {"id": 4, "shape": [8, 8], "dtype": "bool", "role": "intermediate"},
      {"id": 5, "shape": [8, 8], "dtype": "bool", "role": "intermediate"},
      {"id": 6, "shape": [1, 8, 8], "dtype": "float32", "role": "intermediate"},
      {"id": 7, "shape": [1, 8, 8], "dtype": "float32", "role": "intermediate"},
      {"id": 8, "shape": [1, 8, 4], "dtype": "float32", "role": "output"}
    ],
    "ops": [
      {"op": "aten::bmm.default", "args": {"self": {"tensor": 0}, "mat2": {"tensor": 1}},
       "outputs": [3], "module": "attn"},
      {"op": "aten::ones.default", "args": {"size": [8, 8], "dtype": {"dtype": "bool"}},
       "outputs": [4], "module": "attn"},
      {"op": "aten::triu.default", "args": {"self": {"tensor": 4}, "diagonal": 1},
       "outputs": [5], "module": "attn"},
      {"op": "aten::masked_fill.Scalar",
       "args": {"self": {"tensor": 3}, "mask": {"tensor": 5}, "value": {"float": "-inf"}},
       "outputs": [6], "module": "attn"},
      {"op": "aten::_softmax.default",
       "args": {"self": {"tensor": 6}, "dim": -1, "half_to_float": false},
       "outputs": [7], "module": "attn"},
      {"op": "aten::bmm.default", "args": {"self": {"tensor": 7}, "mat2": {"tensor": 2}},
       "outputs": [8], "module": "attn"}
    ]
  })", "causal.json");
  const LowerResult r = lower_aten(t);
  ASSERT_TRUE(r.warnings.empty());
  // The rewrite happened: the P V contraction runs over the causal points only.
  const ir::Op& pv = *std::find_if(r.graph.ops().begin(), r.graph.ops().end(), [&](const ir::Op& op) {
    return r.graph.tensor(op.outputs[0]).role == ir::Role::Output;
  });
  EXPECT_EQ(cost::live_points(pv.einsum()), Count(kCausal * kD));
  EXPECT_EQ(r.graph.module_types, (std::map<std::string, std::string>{{"", "Model"},
                                                                      {"attn", "Attn"}}));
  EXPECT_EQ(r.graph.name, "causal");
  EXPECT_EQ(r.graph.frontend, "torch");
}

}  // namespace
}  // namespace solar::lower
