// The loop nest executor compiled for AVX-512 (Skylake-X and later).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <immintrin.h>
#include <omp.h>

#include "dtype_convert.h"
#include "loop_nest.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c,bmi,bmi2,popcnt,sse4.2")

namespace solar::exec::isa_avx512 {
#include "loop_exec.inc"
}  // namespace solar::exec::isa_avx512

#pragma GCC pop_options
