// The loop nest executor compiled for AVX2 + FMA (Haswell and later).
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
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,popcnt,sse4.2")

namespace solar::exec::isa_avx2 {
#include "loop_exec.inc"
}  // namespace solar::exec::isa_avx2

#pragma GCC pop_options
