// Where the tests find the source tree, the streamline binary and the test plugins. The build
// bakes its own paths in (SL_SOURCE_DIR, SL_CLI_PATH, SL_TEST_PLUGIN_DIR expand to a call of
// this function, see CMakeLists.txt); an environment variable of the same name, when set and
// not empty, wins. That is for a build carried to another machine, where the tree and the
// binaries lie elsewhere: the GPU machine runs a bundle of this build (scripts/gpu-session).
// Force-included into every test source.
#pragma once

const char* sl_test_path(const char* env_name, const char* built_in);
