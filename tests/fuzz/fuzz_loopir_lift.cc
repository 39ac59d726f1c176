// libFuzzer target: the loop language's lifting (src/lower/loopir*.cc). The input is an
// OpTrace as JSON text, read as the loop frontend writes it (docs/optrace.md); its ops are
// lifted by the loopir table, strictly. Any input either is refused with a clear user error
// (a malformed trace, or a refusal of the loop language: outside the language, not affine,
// shape mismatch, ...) or lifts to a graph that verifies. An Unsupported is a bug here: the
// loopir table lifts a nest exactly or refuses it, it never leaves an op unanalyzed.
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "solar/ir/verify.h"
#include "solar/lower/loopir.h"
#include "solar/lower/optrace.h"

namespace {

constexpr const char* kTarget = "fuzz_loopir_lift";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace solar;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    lower::OpTrace trace = lower::parse_optrace(text, "fuzz.json");
    lower::LowerResult r = lower::lower_loopir(trace);
    if (std::optional<std::string> why = ir::why_invalid(r.graph))
      fuzz::bug(kTarget, "the lifted graph does not verify", *why);
  } catch (const UserError&) {
    return 0;
  } catch (const Unsupported& e) {
    fuzz::bug(kTarget, "the lifting left an op unsupported (it lifts exactly or refuses)",
              e.what());
  } catch (const std::exception& e) {
    fuzz::bug(kTarget, "the lifting threw an error that is not a user error", e.what());
  }
  return 0;
}
