#include "kernels/reference.h"
#include "kernels/adam.h"

#include <gtest/gtest.h>

#include "tests/kernels/test_util.h"

namespace sl {
namespace {

// Hand-computed (PyTorch formula, lr 0.1, betas 0.9/0.999, eps 1e-8), p0 = 1, g = 0.5 then -0.25:
// step 1: m = 0.05, v = 0.00025, bc1 = 0.1, bc2 = 0.001
//         p = 1 - 0.1/0.1 * 0.05 / (sqrt(0.00025)/sqrt(0.001) + 1e-8) = 1 - 0.1*0.5/0.50000001 = 0.900000002
// step 2: m = 0.045 - 0.025 = 0.02, v = 0.999*0.00025 + 0.001*0.0625 = 0.00031225,
//         bc1 = 0.19, bc2 = 0.001999
//         p = 0.900000002 - 0.1/0.19 * 0.02 / (sqrt(0.00031225)/sqrt(0.001999) + 1e-8) = 0.8733662987
// Tolerances: the config is float, so 1 - beta1 = 0.100000024 and 1 - beta2 = 9.9998713e-4
// (relative 2.4e-7 and 1.3e-5 from the decimal values PyTorch's Python floats give).
TEST(AdamStep, MatchesHandComputedTwoSteps) {
  AdamConfig cfg;
  cfg.lr = 0.1f;
  Adam adam(1, cfg);
  float p = 1.f;
  float g = 0.5f;
  adam.step(&p, &g);
  EXPECT_EQ(adam.step_count(), 1);
  EXPECT_NEAR(adam.exp_avg()[0], 0.05f, 0.05 * 3e-7);
  EXPECT_NEAR(adam.exp_avg_sq()[0], 0.00025f, 0.00025 * 2e-5);
  EXPECT_NEAR(p, 0.900000002f, 1e-7);
  g = -0.25f;
  adam.step(&p, &g);
  EXPECT_EQ(adam.step_count(), 2);
  EXPECT_NEAR(adam.exp_avg()[0], 0.02f, 0.02 * 1e-6);
  EXPECT_NEAR(adam.exp_avg_sq()[0], 0.00031225f, 0.00031225 * 2e-5);
  EXPECT_NEAR(p, 0.8733662987f, 2e-7);
}

TEST(AdamStep, DefaultsArePyTorchDefaults) {
  const AdamConfig c;
  EXPECT_EQ(c.lr, 1e-3f);
  EXPECT_EQ(c.beta1, 0.9f);
  EXPECT_EQ(c.beta2, 0.999f);
  EXPECT_EQ(c.eps, 1e-8f);
  EXPECT_EQ(c.weight_decay, 0.f);
}

TEST(AdamStep, FlatPassMatchesDoubleReferenceWithWeightDecayOverManySteps) {
  AdamConfig cfg;
  cfg.weight_decay = 0.01f;
  const size_t n = 40000;  // several parallel blocks
  auto p = test::random_vec<float>(n, 1);
  auto pref = p;
  std::vector<float> m(n, 0.f), v(n, 0.f);
  Adam adam(n, cfg);
  for (int s = 1; s <= 5; ++s) {
    auto g = test::random_vec<float>(n, 100 + s);
    adam.step(p.data(), g.data());
    adam_update_reference(pref.data(), m.data(), v.data(), g.data(), n, s, cfg);
  }
  EXPECT_LT(test::rel_err(p, pref), 1e-6);
  EXPECT_LT(test::rel_err(adam.exp_avg(), m), 1e-5);
  EXPECT_LT(test::rel_err(adam.exp_avg_sq(), v), 1e-5);
  // the first step moves every parameter by about lr (Adam's normalised step)
  Adam fresh(1);
  float x = 3.f, gx = 123.f;
  fresh.step(&x, &gx);
  EXPECT_NEAR(x, 3.f - 1e-3f, 1e-6);
}

}  // namespace
}  // namespace sl
