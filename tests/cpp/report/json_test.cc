#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "solar/report/report.h"
#include "testing/fixtures.h"

namespace solar::report {
namespace {

using cost::ContractionClass;
using cost::Work;
using ir::DType;
using nlohmann::json;
using ::testing::HasSubstr;

// Round numbers: tensor bf16 1e15 FLOP/s, vector f32 1e14, DRAM 1e12 B/s, no special unit.
hw::Device synthetic() {
  return testing::DeviceBuilder().tensor(DType::BF16, 1e15).vector(DType::F32, 1e14).dram(1e12).build();
}

using testing::add_tensor;

constexpr std::int64_t kM = 4096, kN = 4096, kK = 8192;

// mm: bf16 [M,K] x [K,N] -> f32 [M,N]; act: an elementwise exp; fft: unanalyzed; v: a view.
// Bodies are placeholders: the report reads the hand-written costs below.
ir::Graph test_graph() {
  ir::Graph g;
  g.name = "toy";
  g.frontend = "torch";
  g.source = "toy.py";
  auto a = add_tensor(g, "a", DType::BF16, {kM, kK}, ir::Role::Input);
  auto b = add_tensor(g, "b", DType::BF16, {kK, kN}, ir::Role::Weight);
  auto c = add_tensor(g, "c", DType::F32, {kM, kN}, ir::Role::Intermediate);
  auto e = add_tensor(g, "e", DType::F32, {kM, kN}, ir::Role::Intermediate);
  auto f = add_tensor(g, "f", DType::F32, {kM, kN / 2 + 1}, ir::Role::Output);
  auto v = add_tensor(g, "v", DType::F32, {kM * kN}, ir::Role::Output);
  ir::Op mm{{}, "mm", {a, b}, {c}, ir::EinsumOp{}, Origin{"toy.py", 7, "aten::mm"}};
  g.add_op(mm);
  g.add_op(ir::Op{{}, "act", {c}, {e}, ir::EinsumOp{}, Origin{}});
  g.add_op(ir::Op{{}, "fft", {e}, {f},
                  ir::UnanalyzedOp{"aten::_fft_r2c", "no lowering for FFT"}, Origin{}});
  g.add_op(ir::Op{{}, "v", {e}, {v}, ir::MoveOp{ir::MoveKind::View, {}}, Origin{}});
  return g;
}

cost::GraphCost test_cost() {
  cost::GraphCost c;
  Work mm;
  mm.contraction = ContractionClass::Matmul;
  mm.macs[DType::BF16] = Count(kM * kN * kK);
  mm.bytes_read = Count(2 * (kM * kK + kK * kN));
  mm.bytes_written = Count(4 * kM * kN);
  Work act;
  act.vector_flops[DType::F32] = Count(kM * kN);
  act.special_ops = Count(kM * kN);  // no special unit on SYN: reported unknown
  act.bytes_read = Count(4 * kM * kN);
  act.bytes_written = Count(4 * kM * kN);
  Work fft;
  fft.analyzed = false;
  Work view;  // free
  c.per_op = {mm, act, fft, view};
  c.total = mm;
  c.total += act;
  c.total += view;
  c.compulsory_bytes_read = Count(2 * (kM * kK + kK * kN));
  c.compulsory_bytes_written = Count(4 * kM * kN);
  c.num_unanalyzed = 1;
  return c;
}

Report make_report(const ir::Graph& g, const std::vector<const hw::Device*>& devices,
                   bound::Options o = {}) {
  Report r;
  r.graph = &g;
  r.cost = test_cost();
  r.options = o;
  for (const hw::Device* d : devices) r.devices.push_back(bound::compute_bounds(g, r.cost, *d, o));
  return r;
}

TEST(ReportJson, HasEveryRequiredField) {
  ir::Graph g = test_graph();
  hw::Device d = synthetic();
  json j = to_json(make_report(g, {&d}));
  for (const char* path :
       {"/schema", "/conventions/mac", "/conventions/flops", "/conventions/bytes",
        "/conventions/seconds", "/conventions/sparsity", "/program/name", "/program/frontend",
        "/program/source",
        "/options/policy", "/options/cache_state", "/totals/macs", "/totals/macs_by_dtype",
        "/totals/macs_2_4", "/totals/macs_2_4_by_dtype",
        "/totals/flops", "/totals/vector_flops", "/totals/special_ops", "/totals/bytes_unfused",
        "/totals/bytes_fused", "/coverage/ops", "/coverage/analyzed", "/coverage/unanalyzed",
        "/coverage/unanalyzed_ops", "/coverage/complete", "/devices/SYN/name",
        "/devices/SYN/unfused/seconds", "/devices/SYN/unfused/bottleneck",
        "/devices/SYN/unfused/terms", "/devices/SYN/unfused/unknown",
        "/devices/SYN/fused/seconds", "/devices/SYN/fused/bottleneck",
        "/devices/SYN/fused/terms", "/devices/SYN/fused/unknown", "/devices/SYN/peaks_used",
        "/ops"}) {
    EXPECT_TRUE(j.contains(json::json_pointer(path))) << path;
  }
  for (const char* key : {"name", "framework_op", "reason", "inputs", "outputs",
                          "bytes_estimate", "share_estimate"})
    EXPECT_TRUE(j["coverage"]["unanalyzed_ops"][0].contains(key)) << key;
  for (const json& op : j["ops"])
    for (const char* key : {"name", "kind", "class", "macs", "macs_2_4", "macs_2_4_by_dtype",
                            "flops", "vector_flops",
                            "special_ops", "bytes", "bytes_read", "bytes_written", "origin",
                            "note", "seconds", "bottleneck", "share"})
      EXPECT_TRUE(op.contains(key)) << op["name"] << " " << key;
}

TEST(ReportJson, Values) {
  ir::Graph g = test_graph();
  hw::Device d = synthetic();
  json j = to_json(make_report(g, {&d}));
  EXPECT_EQ(j["schema"], "solar.report.v1");
  EXPECT_EQ(j["conventions"]["mac"], "1 MAC = 2 FLOP");
  EXPECT_EQ(j["program"]["name"], "toy");
  EXPECT_EQ(j["program"]["frontend"], "torch");
  EXPECT_EQ(j["program"]["source"], "toy.py");
  EXPECT_EQ(j["options"]["policy"], "pytorch-default");
  EXPECT_EQ(j["options"]["cache_state"], "cold");

  const std::uint64_t macs = kM * kN * kK;
  EXPECT_EQ(j["totals"]["macs"], macs);
  EXPECT_EQ(j["totals"]["macs_by_dtype"]["bf16"], macs);
  EXPECT_EQ(j["totals"]["macs_2_4"], 0);  // no 2:4-structured operand
  EXPECT_EQ(j["totals"]["macs_2_4_by_dtype"], json::object());
  EXPECT_EQ(j["totals"]["vector_flops"], kM * kN);
  EXPECT_EQ(j["totals"]["flops"], 2 * macs + kM * kN);  // 2*macs + vector FLOPs
  EXPECT_EQ(j["totals"]["special_ops"], kM * kN);
  EXPECT_EQ(j["totals"]["bytes_unfused"], 2 * (kM * kK + kK * kN) + 4 * kM * kN + 8 * kM * kN);
  EXPECT_EQ(j["totals"]["bytes_fused"], 2 * (kM * kK + kK * kN) + 4 * kM * kN);

  EXPECT_EQ(j["coverage"]["ops"], 4);
  EXPECT_EQ(j["coverage"]["analyzed"], 3);
  EXPECT_EQ(j["coverage"]["unanalyzed"], 1);
  EXPECT_EQ(j["coverage"]["complete"], false);
  const json& u = j["coverage"]["unanalyzed_ops"][0];
  EXPECT_EQ(u["name"], "fft");
  EXPECT_EQ(u["framework_op"], "aten::_fft_r2c");
  EXPECT_EQ(u["reason"], "no lowering for FFT");
  EXPECT_EQ(u["inputs"][0]["name"], "e");
  EXPECT_EQ(u["outputs"][0]["shape"], json({kM, kN / 2 + 1}));
  const std::uint64_t estimate = 4 * kM * kN + 4 * kM * (kN / 2 + 1);  // e in, f out, f32
  EXPECT_EQ(u["bytes_estimate"], estimate);
  EXPECT_THAT(u["bytes_estimate_basis"].get<std::string>(), HasSubstr("estimate"));

  // Per-op roofline on SYN: mm is compute-bound, act memory-bound (its exp is unpriced).
  double t_mm = 2.0 * macs / 1e15;
  double t_act = 8.0 * kM * kN / 1e12;
  ASSERT_GT(t_mm, (2.0 * (kM * kK + kK * kN) + 4.0 * kM * kN) / 1e12);
  const json& dev = j["devices"]["SYN"];
  EXPECT_EQ(dev["name"], "Synthetic device");
  EXPECT_DOUBLE_EQ(dev["unfused"]["seconds"].get<double>(), t_mm + t_act);
  EXPECT_DOUBLE_EQ(u["share_estimate"]["SYN"].get<double>(),
                   (estimate / 1e12) / (t_mm + t_act + estimate / 1e12));
  EXPECT_EQ(dev["fused"]["bottleneck"], "tensor_core.bf16");
  EXPECT_DOUBLE_EQ(dev["fused"]["seconds"].get<double>(), t_mm);
  EXPECT_DOUBLE_EQ(dev["unfused_over_fused"].get<double>(), (t_mm + t_act) / t_mm);
  EXPECT_EQ(dev["peaks_used"]["tensor_core.bf16"], 1e15);
  EXPECT_EQ(dev["peaks_used"]["dram"], 1e12);
  ASSERT_EQ(dev["unfused"]["unknown"].size(), 1u);
  EXPECT_THAT(dev["unfused"]["unknown"][0].get<std::string>(), HasSubstr("special-function"));

  const json& mm = j["ops"][0];
  EXPECT_EQ(mm["kind"], "einsum");
  EXPECT_EQ(mm["class"], "matmul");
  EXPECT_EQ(mm["origin"]["file"], "toy.py");
  EXPECT_EQ(mm["origin"]["line"], 7);
  EXPECT_DOUBLE_EQ(mm["seconds"]["SYN"].get<double>(), t_mm);
  EXPECT_EQ(mm["bottleneck"]["SYN"], "tensor_core.bf16");
  EXPECT_DOUBLE_EQ(mm["share"]["SYN"].get<double>(), t_mm / (t_mm + t_act));
  EXPECT_EQ(j["ops"][1]["class"], "elementwise");
  EXPECT_TRUE(j["ops"][1].contains("unknown"));
  EXPECT_EQ(j["ops"][2]["kind"], "unanalyzed");
  EXPECT_EQ(j["ops"][2]["bottleneck"]["SYN"], "unanalyzed");
  EXPECT_EQ(j["ops"][3]["class"], "move");
  EXPECT_EQ(j["ops"][3]["move_kind"], "view");
  EXPECT_EQ(j["ops"][3]["bottleneck"]["SYN"], "none");
}

TEST(ReportJson, CountsBeyond64BitsAreDecimalStrings) {
  ir::Graph g = test_graph();
  Report r;
  r.graph = &g;
  r.cost = test_cost();
  Count huge = Count(UINT64_MAX) * Count(1000);
  r.cost.total.macs[DType::BF16] = huge;
  json j = to_json(r);
  EXPECT_EQ(j["totals"]["macs"], huge.str());
  EXPECT_EQ(j["totals"]["macs_by_dtype"]["bf16"], huge.str());
  EXPECT_EQ(j["totals"]["vector_flops"], kM * kN);  // small counts stay integers
}

TEST(ReportJson, TwoDevicesAreKeyedById) {
  ir::Graph g = test_graph();
  hw::Device d1 = synthetic();
  hw::Device d2 = synthetic();
  d2.id = "SYN2";
  d2.memory[0].bandwidth = testing::DeviceBuilder::sourced(2e12);
  json j = to_json(make_report(g, {&d1, &d2}));
  EXPECT_TRUE(j["devices"].contains("SYN"));
  EXPECT_TRUE(j["devices"].contains("SYN2"));
  EXPECT_DOUBLE_EQ(j["ops"][1]["seconds"]["SYN2"].get<double>(), 8.0 * kM * kN / 2e12);
  EXPECT_TRUE(j["coverage"]["unanalyzed_ops"][0]["share_estimate"].contains("SYN2"));
}

TEST(ReportJson, CompleteCoverageHasNoUnanalyzedOps) {
  ir::Graph g;
  auto a = add_tensor(g, "a", DType::F32, {4}, ir::Role::Input);
  auto b = add_tensor(g, "b", DType::F32, {4}, ir::Role::Output);
  g.add_op(ir::Op{{}, "neg", {a}, {b}, ir::EinsumOp{}, Origin{}});
  Report r;
  r.graph = &g;
  Work w;
  w.vector_flops[DType::F32] = 4;
  w.bytes_read = 16;
  w.bytes_written = 16;
  r.cost.per_op = {w};
  r.cost.total = w;
  json j = to_json(r);
  EXPECT_EQ(j["coverage"]["complete"], true);
  EXPECT_TRUE(j["coverage"]["unanalyzed_ops"].empty());
  EXPECT_TRUE(j["devices"].empty());
}

}  // namespace
}  // namespace solar::report
