#include "solar/bound/policy.h"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

namespace solar::bound {

std::string_view policy_name(MathPolicy p) {
  switch (p) {
    case MathPolicy::PytorchDefault: return "pytorch-default";
    case MathPolicy::Tf32: return "tf32";
    case MathPolicy::StrictFp32: return "strict-fp32";
  }
  return "?";
}

namespace {

// Lower-case with '_' read as '-', so "PyTorch_Default" and "strict_fp32" parse too.
std::string normalized(std::string_view name) {
  std::string s(name);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == '_') c = '-';
  }
  return s;
}

// The fastest unit of `kind` that publishes a positive rate for `dtype`, as a route.
std::optional<Route> unit_route(const hw::Device& device, hw::UnitKind kind, ir::DType dtype) {
  std::optional<Route> best;
  for (const hw::ComputeUnit& u : device.units) {
    if (u.kind != kind) continue;
    auto it = u.peak.find(dtype);
    if (it == u.peak.end() || !(it->second.value > 0)) continue;
    if (best && best->flops_per_s >= it->second.value) continue;
    best = Route{&u, dtype, it->second.value, ""};
  }
  if (best) best->label = fmt::format("{}.{}", best->unit->name, ir::dtype_name(dtype));
  return best;
}

// The fastest of several equally legal routes (e.g. an fp8 upcast to f16 or to bf16).
std::optional<Route> fastest(const hw::Device& device, hw::UnitKind kind,
                             std::initializer_list<ir::DType> dtypes) {
  std::optional<Route> best;
  for (ir::DType d : dtypes) {
    std::optional<Route> r = unit_route(device, kind, d);
    if (r && (!best || r->flops_per_s > best->flops_per_s)) best = std::move(r);
  }
  return best;
}

using ir::DType;
using hw::UnitKind;

// The half-precision route an fp8 contraction falls back to: upcast to f16/bf16.
std::optional<Route> half_route(const hw::Device& device) {
  if (auto r = fastest(device, UnitKind::Tensor, {DType::F16, DType::BF16})) return r;
  if (auto r = fastest(device, UnitKind::Vector, {DType::F16, DType::BF16})) return r;
  return unit_route(device, UnitKind::Vector, DType::F32);
}

std::optional<Route> fp8_route(const hw::Device& device, DType dtype) {
  if (auto r = unit_route(device, UnitKind::Tensor, dtype)) return r;
  return half_route(device);
}

// Without an int8 tensor rate, an int8 (or int4) matmul runs dequantized on the f16/bf16
// tensor path (an int8 value is exact in both), which outruns a vector i8 path (Gaudi 3,
// Jetson Thor): the faster legal route keeps the bound a lower bound.
std::optional<Route> i8_route(const hw::Device& device) {
  if (auto r = unit_route(device, UnitKind::Tensor, DType::I8)) return r;
  if (auto r = fastest(device, UnitKind::Tensor, {DType::F16, DType::BF16})) return r;
  return unit_route(device, UnitKind::Vector, DType::I8);
}

std::optional<Route> f32_route(const hw::Device& device, MathPolicy policy,
                               cost::ContractionClass cls) {
  bool tensor_tf32 = false;
  switch (policy) {
    case MathPolicy::PytorchDefault:
      // PyTorch leaves TF32 off for matmul (torch.backends.cuda.matmul.allow_tf32 = False)
      // and on for cuDNN convolutions (torch.backends.cudnn.allow_tf32 = True). Its fused
      // attention kernels pick their own units: the memory-efficient (CUTLASS) kernel runs
      // fp32 on tensor cores (3xTF32 on sm80+), so fp32 attention is bounded at the TF32
      // rate (KernelBench level1/97 on H100 runs 2x faster than the fp32 SIMT peak allows).
      switch (cls) {
        case cost::ContractionClass::Convolution:
        case cost::ContractionClass::Attention: tensor_tf32 = true; break;
        case cost::ContractionClass::Matmul:
        case cost::ContractionClass::None: tensor_tf32 = false; break;
      }
      break;
    case MathPolicy::Tf32: tensor_tf32 = true; break;
    case MathPolicy::StrictFp32: tensor_tf32 = false; break;
  }
  if (tensor_tf32)
    if (auto r = unit_route(device, UnitKind::Tensor, DType::TF32)) return r;
  return unit_route(device, UnitKind::Vector, DType::F32);
}

}  // namespace

std::optional<MathPolicy> parse_policy(std::string_view name) {
  std::string n = normalized(name);
  for (MathPolicy p : {MathPolicy::PytorchDefault, MathPolicy::Tf32, MathPolicy::StrictFp32})
    if (policy_name(p) == n) return p;
  if (n == "default" || n == "pytorch") return MathPolicy::PytorchDefault;
  if (n == "fp32" || n == "strict") return MathPolicy::StrictFp32;
  return std::nullopt;
}

std::string_view cache_state_name(CacheState c) {
  switch (c) {
    case CacheState::Cold: return "cold";
    case CacheState::Warm: return "warm";
  }
  return "?";
}

std::optional<CacheState> parse_cache_state(std::string_view name) {
  std::string n = normalized(name);
  for (CacheState c : {CacheState::Cold, CacheState::Warm})
    if (cache_state_name(c) == n) return c;
  return std::nullopt;
}

std::optional<Route> contraction_route(const hw::Device& device, MathPolicy policy,
                                       cost::ContractionClass cls, DType dtype) {
  switch (dtype) {
    case DType::F32:
      return f32_route(device, policy, cls);
    case DType::F64:
      if (auto r = unit_route(device, UnitKind::Tensor, DType::F64)) return r;
      return unit_route(device, UnitKind::Vector, DType::F64);
    case DType::TF32:
    case DType::BF16:
    case DType::F16:
      if (auto r = unit_route(device, UnitKind::Tensor, dtype)) return r;
      if (auto r = unit_route(device, UnitKind::Vector, dtype)) return r;
      return unit_route(device, UnitKind::Vector, DType::F32);
    case DType::F8E4M3:
    case DType::F8E5M2:
      return fp8_route(device, dtype);
    case DType::F6:
    case DType::F4:
      if (auto r = unit_route(device, UnitKind::Tensor, dtype)) return r;
      if (auto r = fastest(device, UnitKind::Tensor, {DType::F8E4M3, DType::F8E5M2})) return r;
      return half_route(device);
    case DType::I8:
      return i8_route(device);
    case DType::I4:
      if (auto r = unit_route(device, UnitKind::Tensor, DType::I4)) return r;
      return i8_route(device);
    case DType::I64:
    case DType::I32:
    case DType::I16:
    case DType::U8:
    case DType::Bool:
      return unit_route(device, UnitKind::Vector, dtype);
  }
  return std::nullopt;
}

Route sparse_2_4_route(const Route& dense) {
  if (dense.sparse_2_4 || dense.unit == nullptr) return dense;
  auto it = dense.unit->sparse_2_4_peak.find(dense.rate_dtype);
  if (it == dense.unit->sparse_2_4_peak.end() || !(it->second.value > 0)) return dense;
  return Route{dense.unit, dense.rate_dtype, it->second.value, dense.label + ".2:4", true};
}

std::optional<Route> vector_route(const hw::Device& device, DType dtype) {
  if (auto r = unit_route(device, UnitKind::Vector, dtype)) return r;
  // A value of at most 32 bits can always be computed in f32 registers; f64 and i64 cannot.
  if (ir::dtype_bits(dtype) <= 32) return unit_route(device, UnitKind::Vector, DType::F32);
  return std::nullopt;
}

std::optional<Route> special_route(const hw::Device& device) {
  std::optional<Route> best;
  for (const hw::ComputeUnit& u : device.units) {
    if (u.kind != UnitKind::Special) continue;
    for (const auto& [dtype, peak] : u.peak) {
      if (!(peak.value > 0)) continue;
      if (best && best->flops_per_s >= peak.value) continue;
      best = Route{&u, dtype, peak.value, u.name};
    }
  }
  return best;
}

std::optional<Route> ceiling_route(const hw::Device& device,
                                   std::initializer_list<hw::UnitKind> kinds) {
  std::optional<Route> sum;
  for (const hw::ComputeUnit& u : device.units) {
    if (std::find(kinds.begin(), kinds.end(), u.kind) == kinds.end()) continue;
    const ir::DType* fastest = nullptr;
    double peak = 0;
    for (const auto& [dtype, p] : u.peak)
      if (p.value > peak) {
        peak = p.value;
        fastest = &dtype;
      }
    if (!fastest) continue;
    std::string label = fmt::format("{}.{}", u.name, ir::dtype_name(*fastest));
    if (!sum) {
      sum = Route{&u, *fastest, peak, label};
      continue;
    }
    if (peak > sum->unit->peak.at(sum->rate_dtype).value) {
      sum->unit = &u;
      sum->rate_dtype = *fastest;
    }
    sum->flops_per_s += peak;
    sum->label += "+" + label;
  }
  return sum;
}

}  // namespace solar::bound
