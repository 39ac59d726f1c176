// The standalone `solar` executable: the CLI without Python.
#include <string>
#include <vector>

#include "solar/cli/cli.h"

int main(int argc, char** argv) {
  return solar::cli::run(std::vector<std::string>(argv, argv + argc));
}
