// write_file_atomically: outputs appear whole or not at all (solar/util/output_file.h).
#include "solar/cli/cli.h"
#include "solar/util/output_file.h"

namespace solar::cli {

void write_file_atomically(const std::string& path, const std::string& contents) {
  StagedFile(path, contents).commit();
}

}  // namespace solar::cli
