// Optimiser: warm-up + cosine schedule values, accumulation equals one big batch,
// clipping bounds the update, save/load resumes exactly. Run: ctest -R train_test
// (one binary: build/bin/train_test --gtest_filter='LrSchedule*:Optimizer*')
#include "worker/train/optim.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

using namespace kforge::train;

TEST(LrSchedule, WarmupThenCosineToTheFloor) {
  OptimConfig config;
  config.lr = 1.0;
  config.min_lr_ratio = 0.1;
  config.warmup_steps = 4;
  config.total_steps = 14;
  EXPECT_DOUBLE_EQ(lr_at(config, 0), 0.25);
  EXPECT_DOUBLE_EQ(lr_at(config, 3), 1.0);
  EXPECT_DOUBLE_EQ(lr_at(config, 4), 1.0);
  EXPECT_NEAR(lr_at(config, 9), 0.55, 1e-12);  // halfway through the decay
  EXPECT_NEAR(lr_at(config, 14), 0.1, 1e-12);
  EXPECT_NEAR(lr_at(config, 100), 0.1, 1e-12);
  for (int step = 5; step < 14; ++step) EXPECT_LT(lr_at(config, step), lr_at(config, step - 1));
}

namespace {

// Quadratic loss sum((W x - y)^2) over rows of a fixed data set.
at::Tensor data_loss(const at::Tensor& weight, int64_t first, int64_t count) {
  at::manual_seed(1);
  at::Tensor x = at::randn({8, 3});
  at::Tensor y = at::randn({8, 2});
  return (at::matmul(x.slice(0, first, first + count), weight.t()) - y.slice(0, first, first + count)).pow(2).sum();
}

}  // namespace

TEST(Optimizer, AccumulationEqualsOneLargeBatch) {
  OptimConfig config;
  config.lr = 0.01;
  config.grad_clip = 0;
  at::Tensor a = at::ones({2, 3}).set_requires_grad(true);
  at::Tensor b = at::ones({2, 3}).set_requires_grad(true);
  OptimConfig accum = config;
  accum.accumulation = 2;
  Optimizer big(std::vector<at::Tensor>{a}, config);
  Optimizer small(std::vector<at::Tensor>{b}, accum);
  for (int step = 0; step < 3; ++step) {
    (data_loss(a, 0, 8) / 2.0).backward();
    ASSERT_TRUE(big.micro_step().has_value());
    (data_loss(b, 0, 4) * small.loss_scale()).backward();
    EXPECT_FALSE(small.micro_step().has_value());
    (data_loss(b, 4, 4) * small.loss_scale()).backward();
    auto info = small.micro_step();
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->step, step + 1);
  }
  EXPECT_TRUE(at::allclose(a, b, 1e-5, 1e-6));
  EXPECT_EQ(big.step(), 3);
  EXPECT_EQ(small.step(), 3);
}

TEST(Optimizer, ClippingBoundsTheUpdate) {
  // With a huge Adam epsilon the first update is lr/eps * g: proportional to the
  // (clipped) gradient, so clipping is visible in the parameters.
  OptimConfig config;
  config.lr = 1e6;
  config.adam_eps = 1e6;
  config.weight_decay = 0;
  config.grad_clip = 1.0;
  at::Tensor w = at::zeros({2, 2}).set_requires_grad(true);
  Optimizer optimizer(std::vector<at::Tensor>{w}, config);
  (w * at::tensor({3.0f, 0.0f, 0.0f, 4.0f}).reshape({2, 2})).sum().backward();
  auto info = optimizer.micro_step();
  ASSERT_TRUE(info.has_value());
  EXPECT_NEAR(info->grad_norm, 5.0, 1e-5);
  EXPECT_NEAR(w.norm().item<double>(), 1.0, 1e-3);
  EXPECT_NEAR(w[0][0].item<double>(), -0.6, 1e-3);
  EXPECT_FALSE(w.grad().defined() && w.grad().abs().sum().item<double>() != 0.0) << "grads are zeroed after a step";
}

TEST(Optimizer, SaveAndLoadResumeExactly) {
  OptimConfig config;
  config.lr = 0.05;
  config.warmup_steps = 2;
  config.total_steps = 10;
  at::Tensor a = at::ones({2, 3}).set_requires_grad(true);
  Optimizer first(std::vector<at::Tensor>{a}, config);
  for (int step = 0; step < 3; ++step) {
    data_loss(a, 0, 8).backward();
    first.micro_step();
  }
  std::string path = "/tmp/kforge_optim_test_" + std::to_string(getpid()) + ".pt";
  first.save(path);
  at::Tensor b = a.detach().clone().set_requires_grad(true);
  Optimizer resumed(std::vector<at::Tensor>{b}, config);
  resumed.load(path);
  EXPECT_EQ(resumed.step(), 3);
  data_loss(a, 0, 8).backward();
  auto continued = first.micro_step();
  data_loss(b, 0, 8).backward();
  auto after_load = resumed.micro_step();
  EXPECT_DOUBLE_EQ(continued->lr, after_load->lr);
  EXPECT_TRUE(at::allclose(a, b, 1e-6, 1e-7));
  std::remove(path.c_str());
  EXPECT_THROW(resumed.load("/nonexistent/optim.pt"), std::runtime_error);
}

TEST(Optimizer, RejectsBadConfig) {
  OptimConfig config;
  config.accumulation = 0;
  at::Tensor w = at::zeros({2}).set_requires_grad(true);
  EXPECT_THROW(Optimizer(std::vector<at::Tensor>{w}, config), std::invalid_argument);
  at::Tensor frozen = at::zeros({2});
  EXPECT_THROW(Optimizer(std::vector<at::Tensor>{frozen}, OptimConfig{}), std::invalid_argument);
}
