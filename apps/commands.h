// Subcommands beyond run/validate/stages/doctor: data tools and inference.
#pragma once
#include <CLI/CLI.hpp>

namespace sl {
// First thing in main(): process-wide settings that must precede library initialisation.
void prepare_process(int argc, char** argv);
void add_commands(CLI::App& app);
int run_commands(CLI::App& app);  // runs whichever of these subcommands was given
}  // namespace sl
