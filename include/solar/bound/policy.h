// Math policy (which unit may execute a contraction of a dtype) and cache state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "solar/cost/work.h"
#include "solar/hw/device.h"

namespace solar::bound {

enum class MathPolicy {
  PytorchDefault,  // fp32 matmul on FP32 SIMT, fp32 convolution on TF32 tensor cores
  Tf32,            // every fp32 contraction may use TF32 tensor cores
  StrictFp32,      // no TF32 anywhere: fp32 contractions on FP32 SIMT
};
std::string_view policy_name(MathPolicy p);  // pytorch-default tf32 strict-fp32
std::optional<MathPolicy> parse_policy(std::string_view name);

enum class CacheState { Cold, Warm };
std::string_view cache_state_name(CacheState c);
std::optional<CacheState> parse_cache_state(std::string_view name);

struct Options {
  MathPolicy policy = MathPolicy::PytorchDefault;
  CacheState cache_state = CacheState::Cold;
};

// Where a contraction of `dtype` runs under `policy` on `device`: the unit and the dtype
// whose peak applies (fp32 conv under pytorch-default -> tensor unit at tf32). nullopt
// when the device publishes no rate for any legal route.
struct Route {
  const hw::ComputeUnit* unit = nullptr;
  ir::DType rate_dtype = ir::DType::F32;
  double flops_per_s = 0;
  std::string label;  // "tensor_core.tf32"
};
std::optional<Route> contraction_route(const hw::Device& device, MathPolicy policy,
                                       cost::ContractionClass cls, ir::DType dtype);
std::optional<Route> vector_route(const hw::Device& device, ir::DType dtype);
std::optional<Route> special_route(const hw::Device& device);

}  // namespace solar::bound
