#include "solar/bound/policy.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace solar::bound {
namespace {

using cost::ContractionClass;
using ir::DType;

// A synthetic device with round numbers: tensor unit bf16/f16 1e15, tf32 5e14, f64 1e14,
// fp8 2e15, i8 2e15; vector unit f32 1e14, f64 5e13, bf16 2e14; special unit 1e12.
hw::Device synthetic() {
  return testing::DeviceBuilder("SYN", "Synthetic")
      .tensor(DType::BF16, 1e15).tensor(DType::F16, 1e15).tensor(DType::TF32, 5e14)
      .tensor(DType::F64, 1e14).tensor(DType::F8E4M3, 2e15).tensor(DType::I8, 2e15)
      .vector(DType::F32, 1e14).vector(DType::F64, 5e13).vector(DType::BF16, 2e14)
      .special(1e12)
      .dram(1e12)
      .build();
}

// Only a vector unit at f32: a CPU-like device.
hw::Device vector_only() {
  return testing::DeviceBuilder("VEC", "").vector(DType::F32, 1e12, "avx512_fma")
      .memory(hw::MemoryLevel::Dram, std::nullopt, 1e11).build();
}

hw::Device without(hw::Device d, hw::UnitKind kind, DType dtype) {
  for (hw::ComputeUnit& u : d.units)
    if (u.kind == kind) u.peak.erase(dtype);
  return d;
}

TEST(PolicyNames, RoundTrip) {
  for (MathPolicy p : {MathPolicy::PytorchDefault, MathPolicy::Tf32, MathPolicy::StrictFp32})
    EXPECT_EQ(parse_policy(policy_name(p)), p);
  EXPECT_EQ(policy_name(MathPolicy::PytorchDefault), "pytorch-default");
  EXPECT_EQ(policy_name(MathPolicy::StrictFp32), "strict-fp32");
  EXPECT_EQ(parse_policy("STRICT_FP32"), MathPolicy::StrictFp32);
  EXPECT_EQ(parse_policy("fast"), std::nullopt);
  for (CacheState c : {CacheState::Cold, CacheState::Warm})
    EXPECT_EQ(parse_cache_state(cache_state_name(c)), c);
  EXPECT_EQ(parse_cache_state("Warm"), CacheState::Warm);
  EXPECT_EQ(parse_cache_state("hot"), std::nullopt);
}

TEST(ContractionRoute, Fp32UnderEachPolicy) {
  hw::Device d = synthetic();
  // pytorch-default: matmul stays on FP32 SIMT, convolution takes TF32 tensor cores.
  auto mm = contraction_route(d, MathPolicy::PytorchDefault, ContractionClass::Matmul, DType::F32);
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->label, "fp32_simt.f32");
  EXPECT_EQ(mm->flops_per_s, 1e14);
  EXPECT_EQ(mm->unit->kind, hw::UnitKind::Vector);
  auto conv =
      contraction_route(d, MathPolicy::PytorchDefault, ContractionClass::Convolution, DType::F32);
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->label, "tensor_core.tf32");
  EXPECT_EQ(conv->rate_dtype, DType::TF32);
  EXPECT_EQ(conv->flops_per_s, 5e14);
  // Fused attention kernels run fp32 on tensor cores (3xTF32): bounded at the TF32 rate.
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, ContractionClass::Attention,
                              DType::F32)->label,
            "tensor_core.tf32");
  const auto all = {ContractionClass::Matmul, ContractionClass::Convolution,
                    ContractionClass::Attention};
  // tf32: every fp32 contraction on TF32 tensor cores.
  for (ContractionClass c : all)
    EXPECT_EQ(contraction_route(d, MathPolicy::Tf32, c, DType::F32)->label, "tensor_core.tf32");
  // strict-fp32: never TF32.
  for (ContractionClass c : all)
    EXPECT_EQ(contraction_route(d, MathPolicy::StrictFp32, c, DType::F32)->label,
              "fp32_simt.f32");
}

TEST(ContractionRoute, Fp32ConvWithoutTf32FallsBackToVector) {
  hw::Device d = without(synthetic(), hw::UnitKind::Tensor, DType::TF32);
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, ContractionClass::Convolution,
                              DType::F32)->label,
            "fp32_simt.f32");
  EXPECT_EQ(contraction_route(d, MathPolicy::Tf32, ContractionClass::Matmul, DType::F32)->label,
            "fp32_simt.f32");
}

TEST(ContractionRoute, HalfPrecisionChain) {
  hw::Device d = synthetic();
  auto m = ContractionClass::Matmul;
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, m, DType::BF16)->label,
            "tensor_core.bf16");
  hw::Device no_tc_bf16 = without(d, hw::UnitKind::Tensor, DType::BF16);
  EXPECT_EQ(contraction_route(no_tc_bf16, MathPolicy::PytorchDefault, m, DType::BF16)->label,
            "fp32_simt.bf16");
  hw::Device no_bf16 = without(no_tc_bf16, hw::UnitKind::Vector, DType::BF16);
  EXPECT_EQ(contraction_route(no_bf16, MathPolicy::PytorchDefault, m, DType::BF16)->label,
            "fp32_simt.f32");
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, m, DType::TF32)->label,
            "tensor_core.tf32");
}

TEST(ContractionRoute, F64PrefersTensorThenVector) {
  hw::Device d = synthetic();
  auto m = ContractionClass::Matmul;
  EXPECT_EQ(contraction_route(d, MathPolicy::StrictFp32, m, DType::F64)->label, "tensor_core.f64");
  hw::Device no_tc = without(d, hw::UnitKind::Tensor, DType::F64);
  auto r = contraction_route(no_tc, MathPolicy::StrictFp32, m, DType::F64);
  EXPECT_EQ(r->label, "fp32_simt.f64");
  EXPECT_EQ(r->flops_per_s, 5e13);
  // f64 never falls to f32: that would not compute the same result.
  EXPECT_FALSE(contraction_route(without(no_tc, hw::UnitKind::Vector, DType::F64),
                                 MathPolicy::StrictFp32, m, DType::F64));
}

TEST(ContractionRoute, Fp8FallsBackToHalfAndFp4ToFp8) {
  hw::Device d = synthetic();
  auto m = ContractionClass::Matmul;
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, m, DType::F8E4M3)->label,
            "tensor_core.f8e4m3");
  // No e5m2 rate: upcast to f16/bf16 on the tensor unit (both 1e15 here).
  auto e5 = contraction_route(d, MathPolicy::PytorchDefault, m, DType::F8E5M2);
  ASSERT_TRUE(e5);
  EXPECT_EQ(e5->unit->kind, hw::UnitKind::Tensor);
  EXPECT_TRUE(e5->rate_dtype == DType::F16 || e5->rate_dtype == DType::BF16);
  EXPECT_EQ(e5->flops_per_s, 1e15);
  // fp4 without an fp4 rate takes the fp8 route.
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, m, DType::F4)->label,
            "tensor_core.f8e4m3");
  // A device whose tensor unit has only bf16: fp8 and fp4 run there, upcast.
  hw::Device bf16_only = without(without(d, hw::UnitKind::Tensor, DType::F8E4M3),
                                 hw::UnitKind::Tensor, DType::F16);
  EXPECT_EQ(contraction_route(bf16_only, MathPolicy::PytorchDefault, m, DType::F4)->label,
            "tensor_core.bf16");
  // A CPU-like device: upcast all the way to f32 on the vector unit.
  EXPECT_EQ(contraction_route(vector_only(), MathPolicy::PytorchDefault, m, DType::F8E4M3)->label,
            "avx512_fma.f32");
}

TEST(ContractionRoute, Integers) {
  hw::Device d = synthetic();
  auto m = ContractionClass::Matmul;
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, m, DType::I8)->label,
            "tensor_core.i8");
  EXPECT_EQ(contraction_route(d, MathPolicy::PytorchDefault, m, DType::I4)->label,
            "tensor_core.i8");  // no i4 rate: the i8 route
  // i32 only on the vector unit at i32, which the synthetic device does not publish.
  EXPECT_FALSE(contraction_route(d, MathPolicy::PytorchDefault, m, DType::I32));
  EXPECT_FALSE(contraction_route(vector_only(), MathPolicy::PytorchDefault, m, DType::I8));
  // No i8 tensor rate (Gaudi 3, Jetson Thor): dequantized onto the f16/bf16 tensor path, not
  // the slower vector i8 (an int8 value is exact in both half types).
  hw::Device no_i8 = without(d, hw::UnitKind::Tensor, DType::I8);
  for (hw::ComputeUnit& u : no_i8.units)  // a vector i8 rate, slower than the half path
    if (u.kind == hw::UnitKind::Vector) u.peak[DType::I8] = testing::DeviceBuilder::sourced(4e14);
  for (DType dt : {DType::I8, DType::I4}) {
    auto r = contraction_route(no_i8, MathPolicy::PytorchDefault, m, dt);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->unit->kind, hw::UnitKind::Tensor);
    EXPECT_EQ(r->flops_per_s, 1e15);
  }
}

TEST(ContractionRoute, FastestUnitWins) {
  hw::Device d = synthetic();
  hw::ComputeUnit second{hw::UnitKind::Tensor, "second_tc", {}, std::nullopt};
  second.peak[DType::BF16] = testing::DeviceBuilder::sourced(3e15);
  d.units.push_back(second);
  auto r = contraction_route(d, MathPolicy::PytorchDefault, ContractionClass::Matmul, DType::BF16);
  EXPECT_EQ(r->label, "second_tc.bf16");
  EXPECT_EQ(r->flops_per_s, 3e15);
}

TEST(VectorRoute, OwnDtypeElseF32) {
  hw::Device d = synthetic();
  EXPECT_EQ(vector_route(d, DType::BF16)->label, "fp32_simt.bf16");
  EXPECT_EQ(vector_route(d, DType::F16)->label, "fp32_simt.f32");   // computing in f32
  EXPECT_EQ(vector_route(d, DType::I32)->label, "fp32_simt.f32");
  EXPECT_EQ(vector_route(d, DType::F64)->label, "fp32_simt.f64");
  EXPECT_FALSE(vector_route(vector_only(), DType::F64));  // f64 cannot be computed in f32
  EXPECT_FALSE(vector_route(vector_only(), DType::I64));
}

TEST(CeilingRoute, SumsEachUnitsFastestDensePeak) {
  hw::Device d = synthetic();
  // Vector units only: fp32_simt's fastest published peak (bf16).
  auto v = ceiling_route(d, {hw::UnitKind::Vector});
  ASSERT_TRUE(v);
  EXPECT_DOUBLE_EQ(v->flops_per_s, 2e14);
  EXPECT_EQ(v->label, "fp32_simt.bf16");
  // Tensor and vector units: each unit's fastest peak, summed (2:4 peaks are no ceiling).
  auto c = ceiling_route(d, {hw::UnitKind::Tensor, hw::UnitKind::Vector});
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->flops_per_s, 2e15 + 2e14);  // tensor f8e4m3/i8 + vector bf16
  EXPECT_FALSE(ceiling_route(vector_only(), {hw::UnitKind::Tensor}));
}

TEST(SpecialRoute, PresentOrAbsent) {
  auto r = special_route(synthetic());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->label, "mufu");
  EXPECT_EQ(r->flops_per_s, 1e12);
  EXPECT_FALSE(special_route(vector_only()));
}

}  // namespace
}  // namespace solar::bound
