#include "solar/interop/accelforge.h"

#include <gtest/gtest.h>

#include "solar/cost/graph_cost.h"
#include "solar/ir/text.h"

namespace solar::interop {
namespace {

std::string yaml_of(const char* text) {
  ir::Graph g = ir::parse_graph(text);
  return accelforge_yaml(build_workload(g, cost::graph_cost(g)));
}

TEST(AccelForgeYaml, GemmHasItsIterationSpaceProjectionsBitsAndRenames) {
  std::string y = yaml_of(R"(
    graph gemm
    a = bf16[10,5] input
    b = bf16[5,30] weight
    c = f32[10,30]{output} einsum "mk,kn->mn" (a, b))");
  EXPECT_NE(y.find("workload:\n  einsums:\n  - name: c\n"), std::string::npos) << y;
  EXPECT_NE(y.find("    iteration_space_shape:\n    - \"0 <= m < 10\"\n    - \"0 <= n < 30\"\n"
                   "    - \"0 <= k < 5\"\n"),
            std::string::npos);
  EXPECT_NE(y.find("    - name: a\n      projection: {A_M: \"m\", A_K: \"k\"}\n"
                   "      bits_per_value: 16\n"),
            std::string::npos);
  EXPECT_NE(y.find("    - name: c\n      projection: {C_M: \"m\", C_N: \"n\"}\n      output: true\n"
                   "      bits_per_value: 32\n"),
            std::string::npos);
  EXPECT_NE(y.find("    renames: {input: a, weight: b, output: c}\n"), std::string::npos);
  // 10*30*5 = 1500 operations, all of them MACs.
  EXPECT_NE(y.find("# Totals: 1500 operations, 1500 MACs; einsums: 1.\n"), std::string::npos);
}

TEST(AccelForgeYaml, MasksAreIslConstraintsAndPaddingStaysInTheProjection) {
  std::string y = yaml_of(R"(
    x = f32[1,4,8] input
    w = f32[4,4,3] weight
    y = f32[1,4,4] einsum [n=1,k=4,p=4,c=4,r=3] sum mul($0,$1) (x[n,c,p*2+r-1] pad 0, w[k,c,r]) -> [n,k,p]
    s = f32[4,4]{output} einsum [i=4,j=4,k=4] sum mul($0,$1) (y[0,i,k], y[0,j,k]) -> [i,j] where i-j >= 0)");
  EXPECT_NE(y.find("      projection: {X_N: \"n\", X_C: \"c\", X_2: \"2*p + r - 1\"}\n"),
            std::string::npos)
      << y;
  EXPECT_NE(y.find("      # graph tensor 'x', padded with 0 outside the tensor\n"), std::string::npos);
  EXPECT_NE(y.find("    - \"i - j >= 0\"\n"), std::string::npos);
  EXPECT_NE(y.find("      projection: {Y_N: \"0\", Y_K: \"i\", Y_P: \"k\"}\n"), std::string::npos);
  EXPECT_NE(y.find("    - name: y__1\n      # graph tensor 'y', read a second time (alias of y)\n"),
            std::string::npos);
}

TEST(AccelForgeYaml, HasNoJinjaDelimitersEvenForOddNames) {
  // AccelForge renders every file with Jinja first: `{{`, `{%` and `{#` must not occur.
  std::string y = yaml_of(R"(
    "x{#1}" = f32[4] input
    "y{{%" = f32[4]{output} einsum [i=4] none exp($0) ("x{#1}"[i]) -> [i])");
  EXPECT_EQ(y.find("{{"), std::string::npos) << y;
  EXPECT_EQ(y.find("{%"), std::string::npos);
  EXPECT_EQ(y.find("{#"), std::string::npos);
  EXPECT_NE(y.find("  - name: y___\n"), std::string::npos);
}

TEST(AccelForgeYaml, LeftOutOpsAreListedWithTheirReasons) {
  std::string y = yaml_of(R"(
    x = f32[4,8] input
    f = f32[4,5] unanalyzed "aten::_fft_r2c" {reason="no lowering for FFT"} (x)
    y = f32[4]{output} einsum "ij->i" (f))");
  EXPECT_NE(y.find("# Left out (1 ops; their outputs are workload inputs):\n#   unanalyzed 'f': "
                   "'aten::_fft_r2c' is not analyzed (no lowering for FFT)"),
            std::string::npos)
      << y;
}

}  // namespace
}  // namespace solar::interop
