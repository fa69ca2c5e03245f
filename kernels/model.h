// LineRefiner: point-wise Conv1d (kernel 1) network of DESIGN.md "The model".
//   context [B,P,in] -> encoder.{0,2,4} (ReLU) -> max over P -> global [B,G]
//   noisy_line [B,L,3] -> line_mlp.{0,2} (ReLU) -> feat [B,L,F]
//   [global, feat] [B,L,G+F] -> regressor.{0,2} (ReLU) -> regressor.4 -> pred_offset [B,L,3]
// Parameters and gradients each live in ONE allocation laid out by the (name, shape) table,
// named exactly as PyTorch's state_dict.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sl {

struct ModelConfig {
  int in_channels = 4, line_channels = 3;
  std::vector<int> encoder{64, 128, 512};
  std::vector<int> line_mlp{64, 128};
  std::vector<int> regressor{256, 128};
  int out_channels = 3;
};

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;  // [out, in, 1] for weights, [out] for biases
  size_t offset, numel;        // in floats, into the one parameter buffer
};

// The table in state_dict order (encoder, line_mlp, regressor; weight then bias).
// Throws sl::Error for an empty or non-positive width.
std::vector<ParamInfo> make_param_table(const ModelConfig& cfg);

// Plain reference of the whole model built from the *_reference ops (naive loops, allocates).
// params laid out by make_param_table(cfg); grads (nullable) is ACCUMULATED into;
// pred (nullable) [B,L,out]. Returns the MSE loss. T = float or double.
template <class T>
T line_refiner_reference(const ModelConfig& cfg, const T* params, T* grads, const T* context,
                         const T* noisy_line, const T* target_offset, int B, int P, int L,
                         T* pred);

class LineRefiner {
 public:
  // PyTorch default Conv1d init (uniform ±1/sqrt(fan_in), weight and bias) from `seed`.
  explicit LineRefiner(ModelConfig cfg = {}, uint64_t seed = 0);
  ~LineRefiner();
  LineRefiner(LineRefiner&&) noexcept;
  LineRefiner& operator=(LineRefiner&&) noexcept;

  // Re-initialises every parameter deterministically (splitmix64, platform independent).
  void init(uint64_t seed);

  // Zeroes the gradients, runs forward + backward, returns the MSE loss (mean over B*L*out).
  // context [B,P,in], noisy_line [B,L,line], target_offset [B,L,out].
  float forward_backward(const float* context, const float* noisy_line,
                         const float* target_offset, int B, int P, int L);
  // Inference: pred_offset [B,L,out].
  void forward(const float* context, const float* noisy_line, int B, int P, int L,
               float* pred_offset);
  // The prediction of the last forward/forward_backward call, [B,L,out].
  const float* last_prediction() const;
  // Rows of the encoder input that received gradient in the last forward_backward (the
  // distinct argmax rows of active channels); the dense encoder backward would use B*P.
  int64_t last_compact_rows() const;

  const std::vector<ParamInfo>& params() const { return table_; }
  const ParamInfo& param(const std::string& name) const;  // throws sl::Error if unknown
  float* param_data() { return params_.data(); }
  const float* param_data() const { return params_.data(); }
  float* grad_data() { return grads_.data(); }
  const float* grad_data() const { return grads_.data(); }
  size_t num_params() const { return params_.size(); }
  const ModelConfig& config() const { return cfg_; }

 private:
  struct Workspace;
  void run_forward(const float* context, const float* noisy_line, int B, int P, int L);
  Workspace& workspace(int B, int P, int L);

  ModelConfig cfg_;
  std::vector<ParamInfo> table_;
  std::vector<float> params_, grads_;
  std::unique_ptr<Workspace> ws_;
};

}  // namespace sl
