// The loop nest executor compiled for the baseline x86-64 (SSE2) instruction set.
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


namespace solar::exec::isa_base {
#include "loop_exec.inc"
}  // namespace solar::exec::isa_base

#pragma GCC pop_options
