#include "solar/interop/timeloop.h"

#include <gtest/gtest.h>

#include <sstream>

#include "solar/cost/graph_cost.h"
#include "solar/cost/work.h"
#include "solar/ir/text.h"

namespace solar::interop {
namespace {

Workload workload_of(const ir::Graph& g) { return build_workload(g, cost::graph_cost(g)); }

std::vector<std::pair<std::string, std::string>> problems_of(const Workload& w) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ExportFile& f : timeloop_files(w))
    if (f.path.starts_with("problems/")) out.emplace_back(f.path, f.contents);
  return out;
}

// Drops the `# solar:` lines: what Timeloop itself reads.
std::string timeloop_only(const std::string& text) {
  std::string out, line;
  std::istringstream in(text);
  while (std::getline(in, line))
    if (!line.starts_with("# solar:")) out += line + "\n";
  return out;
}

// Per einsum of `g` (graph order) and of the re-read graph: MACs, live points and each
// operand's footprint must agree.
void expect_round_trip(const ir::Graph& g) {
  Workload w = workload_of(g);
  ir::Graph back = read_timeloop_problems(problems_of(w), g.name);
  cost::GraphCost c = cost::graph_cost(back);
  ASSERT_EQ(back.ops().size(), w.einsums.size());
  for (std::size_t i = 0; i < w.einsums.size(); ++i) {
    const WorkloadEinsum& e = w.einsums[i];
    const ir::Op& op = back.ops()[i];
    SCOPED_TRACE(e.solar_name);
    EXPECT_EQ(op.name, e.solar_name);
    EXPECT_EQ(c.per_op[i].total_macs(), e.macs);
    EXPECT_EQ(c.per_op[i].live_points, e.live_points);
    for (std::size_t k = 0; k + 1 < e.accesses.size(); ++k)
      EXPECT_EQ(cost::operand_footprint(op.einsum(), op.einsum().operands[k],
                                        back.tensor(op.inputs[k])),
                e.accesses[k].footprint)
          << "operand " << k;
  }
}

TEST(TimeloopProblem, GemmIsTheClassicThreeDataSpaceProblem) {
  ir::Graph g = ir::parse_graph(R"(
    graph gemm
    a = bf16[10,5] input
    b = bf16[5,30] weight
    c = f32[10,30]{output} einsum "mk,kn->mn" (a, b))");
  Workload w = workload_of(g);
  std::string p = timeloop_problem(w, w.einsums[0]);
  EXPECT_NE(p.find("problem:\n  version: 0.4\n  shape:\n    name: c\n    dimensions: [M, N, K]\n"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("    - name: a\n      projection:\n      - [[M]]\n      - [[K]]\n"),
            std::string::npos);
  EXPECT_NE(p.find("    - name: c\n      projection:\n      - [[M]]\n      - [[N]]\n"
                   "      read_write: true\n"),
            std::string::npos);
  EXPECT_NE(p.find("  instance:\n    M: 10\n    N: 30\n    K: 5\n"), std::string::npos);
  EXPECT_NE(p.find("# solar: data_space a tensor a bf16[10,5] offset [0,0]\n"), std::string::npos);
}

TEST(TimeloopProblem, StridesAreCoefficientsAndPaddingOffsetsAreDropped) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[2,8,32,32] input
    w = f32[16,8,3,3] weight
    y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r-1,q*2+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q])");
  Workload w = workload_of(g);
  std::string p = timeloop_problem(w, w.einsums[0]);
  EXPECT_NE(p.find("    coefficients:\n    - name: Coef2\n      default: 2\n"), std::string::npos)
      << p;
  // x[n, c, 2p + r - 1, 2q + s - 1]: Timeloop's CNN-layer form, the -1 in the offsets line.
  EXPECT_NE(p.find("      - [[P, Coef2], [R]]\n      - [[Q, Coef2], [S]]\n"), std::string::npos);
  EXPECT_NE(p.find("# solar: data_space x tensor x f32[2,8,32,32] offset [0,0,-1,-1] pad 0\n"),
            std::string::npos);
}

TEST(TimeloopProblem, ConstantSubscriptsProjectOnAnExtentOneDimension) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[64,1024] input
    s = f32[64,1]{output} einsum [i=64,r=1024] sum $0 (x[i,r]) -> [i,0])");
  Workload w = workload_of(g);
  std::string p = timeloop_problem(w, w.einsums[0]);
  EXPECT_NE(p.find("dimensions: [I, R, Z]"), std::string::npos) << p;
  EXPECT_NE(p.find("      - [[I]]\n      - [[Z]]\n      read_write: true\n"), std::string::npos);
  EXPECT_NE(p.find("    Z: 1\n"), std::string::npos);
}

TEST(TimeloopProblem, MoreThanFiveDataSpacesIsUnsupported) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[4] input
    y = f32[4]{output} einsum [i=4] none add(add(add(add($0,$1),$2),$3),$4) (a[i], a[i], a[i], a[i], a[i]) -> [i])");
  Workload w = workload_of(g);
  EXPECT_THROW(timeloop_problem(w, w.einsums[0]), Unsupported);
  std::vector<std::string> skipped;
  std::vector<ExportFile> files = timeloop_files(w, &skipped);
  ASSERT_EQ(files.size(), 1u);  // only the LoopTree workload
  EXPECT_EQ(files[0].path, "workload.yaml");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("MAX_DATA_SPACES"), std::string::npos);
}

TEST(TimeloopRoundTrip, GemmConvolutionAttentionAndMlpReReadWithTheSameCounts) {
  expect_round_trip(ir::parse_graph(R"(
    graph gemm
    a = bf16[64,32] input
    b = bf16[32,48] weight
    c = f32[64,48]{output} einsum "mk,kn->mn" (a, b))"));
  expect_round_trip(ir::parse_graph(R"(
    graph conv
    x = f32[2,8,32,32] input
    w = f32[16,8,3,3] weight
    y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r-1,q*2+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q])"));
  expect_round_trip(ir::parse_graph(R"(
    graph attention
    x = f32[8,64] input
    wq = f32[64,64] weight
    wk = f32[64,64] weight
    q = f32[8,64] einsum "sd,de->se" (x, wq)
    k = f32[8,64] einsum "sd,de->se" (x, wk)
    qh = f32[8,4,16] move view (q)
    kh = f32[8,4,16] move view (k)
    s = f32[4,8,8] einsum [h=4,i=8,j=8,d=16] sum mul($0,$1) (qh[i,h,d], kh[j,h,d]) -> [h,i,j] where i-j >= 0
    m = f32[4,8,1] einsum [h=4,i=8,j=8] max $0 (s[h,i,j]) -> [h,i,0] where i-j >= 0
    p = f32[4,8,8]{output} einsum [h=4,i=8,j=8] none exp(sub($0,$1)) (s[h,i,j], m[h,i,0]) -> [h,i,j] where i-j >= 0)"));
  expect_round_trip(ir::parse_graph(R"(
    graph mlp
    x = bf16[16,32] input
    w1 = bf16[32,64] weight
    w2 = bf16[64,32] weight
    h = f32[16,64] einsum "md,df->mf" (x, w1)
    a = bf16[16,64] einsum [m=16,f=64] none mul($0,sigmoid($0)) (h[m,f]) -> [m,f]
    y = f32[16,32]{output} einsum "mf,fd->md" (a, w2))"));
}

TEST(TimeloopRoundTrip, WithoutSolarLinesTheMacsOfContractionsStillAgree) {
  // What Timeloop alone says: every point a MAC into the read_write space, data spaces as
  // large as their projections' ranges (the padded input of a convolution).
  ir::Graph g = ir::parse_graph(R"(
    graph conv
    x = f32[2,8,34,34] input
    w = f32[16,8,3,3] weight
    y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r,q*2+s], w[k,c,r,s]) -> [n,k,p,q])");
  Workload w = workload_of(g);
  std::vector<std::pair<std::string, std::string>> files = problems_of(w);
  for (auto& f : files) f.second = timeloop_only(f.second);
  ir::Graph back = read_timeloop_problems(files);
  cost::GraphCost c = cost::graph_cost(back);
  EXPECT_EQ(c.total.total_macs(), Count(2 * 16 * 16 * 16 * 8 * 3 * 3));
  // The input's data space: rows 0 .. 2*15 + 2 = 32 of the 34 the tensor has.
  EXPECT_EQ(back.tensor(back.ops()[0].inputs[0]).shape,
            (std::vector<std::int64_t>{2, 8, 33, 33}));
  EXPECT_EQ(back.tensor(back.ops()[0].inputs[0]).dtype, ir::DType::F32);
}

TEST(TimeloopReader, AHandWrittenProblemInTheDocumentedFormReads) {
  // Timeloop's own CNN-layer shape (problem-shapes/cnn_layer.yaml) with an instance.
  const char* cnn = R"(
problem:
  shape:
    name: CNN_Layer
    dimensions: [ R, S, P, Q, C, K, N ]
    coefficients:
      - name: Wstride
        default: 1
      - name: Hstride
        default: 1
      - name: Wdilation
        default: 1
      - name: Hdilation
        default: 1
    data_spaces:
      - name: Weights
        projection:
          - [ [C] ]
          - [ [K] ]
          - [ [R] ]
          - [ [S] ]
      - name: Inputs
        projection:
          - [ [N] ]
          - [ [C] ]
          - [ [R, Wdilation], [P, Wstride] ]
          - [ [S, Hdilation], [Q, Hstride] ]
      - name: Outputs
        projection:
          - [ [N] ]
          - [ [K] ]
          - [ [Q] ]
          - [ [P] ]
        read_write: True
  instance:
    R: 3
    S: 3
    P: 14
    Q: 14
    C: 64
    K: 128
    N: 1
    Wstride: 2
    Hstride: 2
)";
  ir::Graph g = read_timeloop_problems({{"cnn.yaml", cnn}});
  cost::GraphCost c = cost::graph_cost(g);
  EXPECT_EQ(c.total.total_macs(), Count(3 * 3 * 14 * 14 * 64 * 128 * 1));
  // Inputs rows: R + 2P ranges over 0 .. 2 + 26 = 28, so 29 rows.
  EXPECT_EQ(g.tensor(*g.find_tensor("Inputs")).shape, (std::vector<std::int64_t>{1, 64, 29, 29}));
  EXPECT_EQ(g.op(ir::OpId{0}).name, "CNN_Layer");
}

TEST(TimeloopReader, SchemaViolationsNameTheKey) {
  auto error_of = [](const std::string& text) {
    try {
      read_timeloop_problems({{"p.yaml", text}});
    } catch (const UserError& e) {
      EXPECT_EQ(e.kind(), UserError::Kind::Parse);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "problem:\n  shape:\n    name: x\n";
  EXPECT_NE(error_of("nothing: 1\n").find("no 'problem' key"), std::string::npos);
  EXPECT_NE(error_of(head + "    dimensions: [MM]\n    data_spaces: []\n  instance: {}\n")
                .find("problem.shape.dimensions[0]: 'MM' is not a one-letter dimension name"),
            std::string::npos);
  std::string two = head +
                    "    dimensions: [M]\n    data_spaces:\n    - name: a\n      projection: [[[M]]]\n"
                    "    - name: b\n      projection: [[[M]]]\n";
  EXPECT_NE(error_of(two + "  instance: {M: 4}\n").find("0 read_write data spaces"),
            std::string::npos);
  EXPECT_NE(error_of(two + "      read_write: true\n  instance: {}\n").find("no extent for 'M'"),
            std::string::npos);
  EXPECT_NE(error_of(two + "      read_write: true\n  instance: {M: 4, X: 2}\n")
                .find("problem.instance.X: neither a dimension nor a coefficient"),
            std::string::npos);
  EXPECT_NE(error_of(head + "    dimensions: [M]\n    extra: 1\n").find("unknown key 'extra'"),
            std::string::npos);
  EXPECT_NE(error_of(head +
                     "    dimensions: [M]\n    data_spaces:\n    - name: a\n      projection: "
                     "[[[M, Stride]]]\n      read_write: true\n  instance: {M: 4}\n")
                .find("problem.shape.data_spaces[0].projection[0][0][1]: 'Stride' is not a "
                      "coefficient"),
            std::string::npos);
  EXPECT_NE(error_of("problem: [\n").find("malformed YAML"), std::string::npos);
}

TEST(TimeloopLoopTree, ProblemsAreAListWithIslProjectionsAndMasks) {
  ir::Graph g = ir::parse_graph(R"(
    graph chain
    a = f32[4,256] input
    s = f32[4,4] einsum [q=4,k=4,n=256] sum mul($0,$1) (a[q,n], a[k,n]) -> [q,k] where q-k >= 0
    t = f32[4]{output} einsum "qk->q" (s))");
  std::string y = timeloop_looptree_workload(workload_of(g));
  EXPECT_NE(y.find("problem:\n- shape:\n    name: s\n    dimensions: [q_s, k_s, n_s]\n"),
            std::string::npos)
      << y;
  EXPECT_NE(y.find("    - name: a__1\n      dimensions: [a__1_0, a__1_1]\n      projection: "
                   "\"[k_s, n_s]\"\n"),
            std::string::npos);
  EXPECT_NE(y.find("  instance: \"0 <= q_s < 4 and 0 <= k_s < 4 and 0 <= n_s < 256 and q_s - "
                   "k_s >= 0\"\n"),
            std::string::npos);
  // s is written by the first problem and read by the second under one name.
  EXPECT_NE(y.find("    - name: s\n      dimensions: [s_0, s_1]\n      projection: \"[q_t, k_t]\"\n"),
            std::string::npos);
}

}  // namespace
}  // namespace solar::interop
