// Helpers shared by the kernel tests.
#pragma once
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sl::test {

// Uniform values in ±[0.1, 1] (never zero, so no input sits on a ReLU kink by construction).
template <class T>
std::vector<T> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> mag(0.1, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = T(mag(rng) * (rng() & 1 ? 1.0 : -1.0));
  return v;
}

// max |a - b| / max(max |b|, floor): error relative to the gradient's scale.
template <class A, class B>
double rel_err(const A& a, const B& b, double floor = 1e-12) {
  double num = 0, den = floor;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - double(b[i])));
    den = std::max(den, std::abs(double(b[i])));
  }
  return num / den;
}

// Central finite differences of loss() w.r.t. every element of x (double precision).
inline std::vector<double> numeric_grad(std::vector<double>& x, const std::function<double()>& loss,
                                        double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double fp = loss();
    x[i] = keep - h;
    const double fm = loss();
    x[i] = keep;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

// Runs a test script of this tree (tests/kernels/NAME) with Debian's python3, its stdout and
// stderr into *out. Returns its exit status; -1 when it did not exit normally. Such scripts exit
// 77 when what they need (torch) is missing: the caller skips, saying so.
inline int run_python_check(const std::string& name, const std::string& args, std::string* out) {
  const std::string cmd = "/usr/bin/python3 " + std::string(SL_SOURCE_DIR) + "/tests/kernels/" + name + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace sl::test
