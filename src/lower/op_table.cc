#include "op_table.h"

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::lower::detail {

void TableBuilder::add(std::string_view registrant,
                       const std::function<void(const Register&)>& hook) {
  hook([&](std::string_view name, Fn f) {
    auto [it, added] = registrant_.emplace(name, std::string(registrant));
    SOLAR_CHECK(added, fmt::format("the {} table registers op '{}' twice: in {} and in {}",
                                   dialect_, name, it->second, registrant));
    table_.emplace(name, std::move(f));
  });
}

}  // namespace solar::lower::detail
