// Math policy (which unit may execute a contraction of a dtype) and cache state.
//
// Routes (docs/bounds.md): a contraction of dtype d runs on the first route below that the
// device publishes a rate for; the rate is the peak of that unit at the route's dtype.
//   f32   pytorch-default: Matmul -> vector f32; Convolution -> tensor tf32, else vector f32
//         tf32:            any contraction -> tensor tf32, else vector f32
//         strict-fp32:     vector f32
//   f64   tensor f64, vector f64
//   tf32 / bf16 / f16      tensor d, vector d, vector f32
//   f8e4m3 / f8e5m2        tensor d, then the f16/bf16 route (upcast)
//   f6 / f4                tensor d, then the fp8 route
//   i8    tensor i8, vector i8;   i4: tensor i4, then the i8 route
//   other integers, bool   vector d
// Vector work of dtype d runs on the vector unit at d, else at f32 when d is at most 32 bits
// wide (computing in f32 is always possible); special-function ops on the special unit.
// 2:4-structured MACs (cost::Work::macs_2_4) take their contraction's route at the unit's
// 2:4 sparse peak for the route's rate dtype, when the unit publishes one; otherwise the
// dense route itself (the zeros are not skipped: vector units, TPUs, the host).
#pragma once

#include <initializer_list>
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
  double flops_per_s = 0;  // dense-equivalent for a 2:4 route (the zeros counted as done)
  std::string label;       // "tensor_core.tf32"; a 2:4 route "tensor_core.bf16.2:4"
  bool sparse_2_4 = false;  // priced at the unit's 2:4 structured-sparse peak
};
std::optional<Route> contraction_route(const hw::Device& device, MathPolicy policy,
                                       cost::ContractionClass cls, ir::DType dtype);
// Where the 2:4-structured MACs of a contraction whose dense route is `dense` run: the same
// unit and rate dtype at its 2:4 sparse peak (label "<unit>.<dtype>.2:4"), or `dense`
// itself when the unit publishes no sparse peak for that dtype.
Route sparse_2_4_route(const Route& dense);
// Where elementwise/reduction FLOPs of `dtype` run: the vector unit at `dtype`, else at f32
// for dtypes of at most 32 bits. nullopt when neither rate is published.
std::optional<Route> vector_route(const hw::Device& device, ir::DType dtype);
// The special-function unit (its fastest published rate, in ops/s); label is the unit name
// ("mufu"). nullopt when the device publishes none (TPU, MI300X, most CPUs).
std::optional<Route> special_route(const hw::Device& device);

// Ceilings (docs/bounds.md, "Unknown rates"): a rate no device can exceed for work of a kind
// it publishes no rate for. `kinds` are the unit kinds that can execute the work; the ceiling
// is the sum over their units of each unit's fastest dense peak at any dtype (FLOP/s): each
// element of such work takes at least one operation of some unit, no unit runs an operation
// faster than its fastest published one, and all of them might work at once. (2:4 peaks count
// skipped zeros as done, so they are no ceiling.) `unit` is the fastest of those units,
// `rate_dtype` its dtype, and `label` names each unit's peak ("fp32_simt.bf16", joined by
// '+'). nullopt when no unit of those kinds publishes a rate.
std::optional<Route> ceiling_route(const hw::Device& device,
                                   std::initializer_list<hw::UnitKind> kinds);

}  // namespace solar::bound
