// LineRefiner: point-wise Conv1d (kernel 1) network (docs/training.md, "The model").
//   context [B,P,in] -> encoder.{0,2,4} (ReLU) -> max over P -> global [B,G]
//   noisy_line [B,L,3] -> line_mlp.{0,2} (ReLU) -> feat [B,L,F]
//   [global, feat] [B,L,G+F] -> regressor.{0,2} (ReLU) -> regressor.4 -> pred_offset [B,L,3]
// With a local branch (ModelConfig::local not empty; "line_refiner_local"):
//   local [B,L,K,in] -> local.{0,2} (ReLU) over the B*L*K rows -> max over K -> [B,L,C]
//   and the regressor reads [global, feat, local[l-W] .. local[l+W]] [B,L,G+F+(2W+1)C]
//   (zeros beyond the line's ends): the encoder's structure on B*L groups of K points, and a
//   kernel-(2W+1) convolution along the line fused into the regressor's first layer.
// With a variance head (ModelConfig::variance not empty):
//   the regressor's last hidden layer [B,L,R], detached -> variance.{0,2,..} (ReLU) -> variance.N
//   -> log_var [B,L,3]: the log variance of the offset's error per axis of the sample frame
//   (x along the line, y across, z up), trained by the Gaussian likelihood of the residual the
//   offsets leave (kernels/ops.h, gaussian_nll_backward). Detached, it changes nothing upstream:
//   the offsets train exactly as without it.
// The layer sequence (forward, loss, backward, Adam) is written ONCE, in kernels/model.cpp,
// over the ops of kernels/ops.h, and runs on either backend (kernels/backend.h). Parameters and
// gradients each live in ONE allocation laid out by the (name, shape) table, named exactly as
// PyTorch's state_dict; activations in ONE workspace described by model_workspace().
//
// Who waits when: on the CPU every call is done when it returns. On CUDA the model owns a
// non-blocking stream and a cuBLAS handle; step*/forward/load_inputs/request_loss only ENQUEUE;
// download_*/upload_*/forward_backward/read_loss wait for the model's stream; prepare()
// allocates (once, before the hot loop).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/adam.h"
#include "kernels/backend.h"

namespace sl {

namespace cuda {
struct GemmShape;
}

// Activation recomputation (gradient checkpointing) of the encoders: `on` keeps only their inputs
// (and the max's outputs and argmax) from the forward pass, which runs them over chunks of
// recompute_chunk_groups() groups through chunk-sized activation buffers; the backward runs the
// layers before the max again over the same chunks (the same GEMM row blocks, so the same bits)
// and keeps only the compact argmax rows the sparse backward reads (kernels/ops.h) -- the same
// gradients bit for bit on the CPU, for one more forward pass of those layers. `automatic` ("auto") is resolved by the caller
// before prepare() (train/step_core.cpp: on a GPU, on when the batch would not fit otherwise;
// on the CPU, off); the model itself treats it as off.
enum class Recompute { off, on, automatic };
const char* recompute_name(Recompute r);  // "off" | "on" | "auto"
Recompute parse_recompute(const std::string& s);  // throws sl::Error otherwise

struct ModelConfig {
  int in_channels = 4, line_channels = 3;
  std::vector<int> encoder{64, 128, 512};
  std::vector<int> line_mlp{64, 128};
  std::vector<int> regressor{256, 128};
  int out_channels = 3;
  // The local branch: empty = the seeds' model (bit-identical to it). Otherwise the widths of
  // local.{0,2,..} over the K points grouped around each line point (in_channels each), and W,
  // the neighbours on each side whose local features a line point's regressor row reads.
  std::vector<int> local;
  int local_k = 0, local_window = 1;
  bool has_local() const { return !local.empty(); }
  // The variance head: empty = none. Otherwise the hidden widths of variance.{0,2,..}; a final
  // layer to out_channels log variances follows.
  std::vector<int> variance;
  bool has_variance() const { return !variance.empty(); }
  // Inference only (evaluation, infer; training never): the prediction averaged over 1, 2 or 4
  // views of each sample (kernels/model_views.h). No parameter depends on it.
  int views = 1;
  // Training memory only (no parameter depends on it): see Recompute above.
  Recompute recompute = Recompute::off;
  bool recomputes() const { return recompute == Recompute::on; }
};

// Rows a recomputing encoder runs its forward through at a time (its activation buffers'
// height): about this many, rounded to whole groups and to the CPU GEMM's row blocks.
inline constexpr int64_t kRecomputeRows = 16384;
// Groups per forward chunk for `groups` groups of `points` points (<= groups, >= 1).
int recompute_chunk_groups(int groups, int points);

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;  // [out, in, 1] for weights, [out] for biases
  size_t offset, numel;        // in floats, into the one parameter buffer
};

// One point-wise layer: widths and where its weight and bias sit in the parameter buffer.
struct Layer {
  int in, out;
  size_t w, b;  // offsets in floats
};
struct ModelLayout {
  std::vector<Layer> enc, line, reg;  // reg includes the final output layer
  std::vector<Layer> local;            // empty: no local branch
  std::vector<Layer> var;              // empty: no variance head (else its last layer gives log_var)
};
// Throws sl::Error for an empty or non-positive width.
ModelLayout model_layout(const ModelConfig& cfg);

// The table in state_dict order (encoder, line_mlp, regressor, then local, then variance; weight
// then bias).
// The local branch comes last so that PyTorch's order (a subclass adds `local` after the
// seeds' modules) and the seeds' offsets both stay as they are.
std::vector<ParamInfo> make_param_table(const ModelConfig& cfg);
size_t num_model_params(const ModelConfig& cfg);
// Floats of one batch's input tensors (context, noisy_line, target_offset, and local [B,L,K,in]
// with a local branch).
size_t batch_input_floats(const ModelConfig& cfg, int B, int P, int L);

// ---- the workspace: every activation, saved value and activation gradient ----------------
// Names and shapes for a capacity of B samples (NP = B*P, NL = B*L, G = encoder.back(),
// U = argmax_rows_capacity(B, P, G)); buffers marked [cuda] exist only on that backend:
//   input.context [NP,in]  input.noisy_line [NL,line]  input.target_offset [NL,out]
//   enc.act.i [NP, encoder[i]] (all but the last layer)   enc.pre_max [NP,G] [cuda]
//   global [B,G]  argmax [B,G] i32   line.act.i [NL,..]  reg.act.i [NL,..]  reg.scratch [B,reg0]
//   rows.* (ArgmaxRows, kernels/ops.h)   enc.in.i [U, encoder input i] (gathered)
//   enc.cgrad.i [U, encoder input i] (i >= 1)   dglobal [B,G]  line.grad.i  reg.grad.i
//   loss (LossState: sum f64, count i32, last f32)   ones [max(NL,U,B,UL)] [cuda]
// With cfg.recomputes(), enc.act.i and enc.pre_max hold one forward chunk, [CP, ..] with
// CP = recompute_chunk_groups(B, P) * P rows (and loc.act.i, loc.pre_max [CK*K, ..], CK =
// recompute_chunk_groups(NL, K)); every other buffer is as listed.
// With a local branch (NLK = NL*K, C = local.back(), UL = argmax_rows_capacity(NL, K, C),
// Fw = F + (2W+1)C):   input.local [NLK,in]   loc.act.i [NLK, local[i]] (all but the last)
//   loc.pre_max [NLK,C] [cuda]   loc.out [NL,C]  loc.argmax [NL,C] i32   window [NL,Fw]
//   loc.rows.* (ArgmaxRows)   loc.in.i [UL, ..]   loc.cgrad.i [UL, ..] (i >= 1)
//   window.grad [NL,Fw]   loc.dout [NL,C]
// With a variance head: var.act.i [NL, ..] (the last: log_var [NL,out])  var.grad.i [NL, ..]
struct WorkspaceBuffer {
  std::string name;
  std::vector<int64_t> shape;
  size_t elem_bytes, offset, bytes;  // offset and size in bytes, offsets 256-byte aligned
};
struct WorkspaceLayout {
  std::vector<WorkspaceBuffer> buffers;
  size_t total_bytes = 0;
  const WorkspaceBuffer& at(const std::string& name) const;  // throws sl::Error if unknown
  bool has(const std::string& name) const;
};
// Throws sl::Error for a bad config or non-positive sizes.
WorkspaceLayout model_workspace(const ModelConfig& cfg, int B, int P, int L, const Backend& backend);

class LineRefiner {
 public:
  // PyTorch default Conv1d init (uniform ±1/sqrt(fan_in), weight and bias) from `seed`, the
  // same bytes on every backend.
  explicit LineRefiner(ModelConfig cfg = {}, uint64_t seed = 0, Backend backend = Backend::cpu(),
                       Precision precision = Precision::FP32);
  ~LineRefiner();
  LineRefiner(LineRefiner&&) noexcept;
  LineRefiner& operator=(LineRefiner&&) noexcept;

  // Re-initialises every parameter deterministically (splitmix64, platform independent).
  void init(uint64_t seed);

  // ---- where it runs ----------------------------------------------------------------------
  const Backend& backend() const;
  const OpContext& context() const;  // what the model's ops run with (its stream on CUDA)
  void set_precision(Precision p);   // CUDA: drops the captured step graph
  // Activation recomputation on or off (config().recompute becomes on | off); a change drops
  // the workspace (prepare() again) and the captured step graph. Same gradients either way.
  void set_recompute(bool on);

  // ---- parameters (backend memory: host pointers on the CPU) -------------------------------
  const std::vector<ParamInfo>& params() const { return table_; }
  const ParamInfo& param(const std::string& name) const;  // throws sl::Error if unknown
  float* param_data();
  const float* param_data() const;
  float* grad_data();
  const float* grad_data() const;
  size_t num_params() const { return n_; }
  const ModelConfig& config() const { return cfg_; }
  // Host copies (CUDA: wait for the model's stream).
  void download_params(float* host) const;
  void upload_params(const float* host);
  void download_grads(float* host) const;

  // ---- workspace -----------------------------------------------------------------------------
  // Allocates the workspace for batches of up to `capacity` samples of P points and L line
  // points, once; later calls with B <= capacity (a short last batch) run inside it with no
  // allocation. A call with another P, L or a larger B re-allocates (and drops the graph).
  void prepare(int capacity, int P, int L);
  int capacity() const;
  // The fixed inputs step_inputs() reads (backend memory, [capacity, ...]).
  float* input_context();
  float* input_noisy();
  float* input_target();
  float* input_local();  // [capacity, L, K, in]; throws without a local branch
  // Copies the first B samples of a batch (backend memory) into the fixed inputs; local
  // [B,L,K,in] is required with a local branch and ignored without one (so for every `local`
  // argument below).
  void load_inputs(const float* context, const float* noisy_line, const float* target_offset, int B,
                   const float* local = nullptr);

  // ---- training ------------------------------------------------------------------------------
  // Zeroes the gradients, runs forward + backward, returns the MSE loss (mean over B*L*out);
  // CUDA: waits for it. context [B,P,in], noisy_line [B,L,line], target_offset [B,L,out].
  float forward_backward(const float* context, const float* noisy_line, const float* target_offset, int B, int P,
                         int L, const float* local = nullptr);
  // forward_backward + one Adam step, without returning the loss (it accumulates for
  // request_loss). Inputs in backend memory.
  void step(const float* context, const float* noisy_line, const float* target_offset, int B, int P, int L,
            Adam& adam, const float* local = nullptr);
  // step() on the fixed inputs. CUDA with B == capacity: ONE CUDA graph (the first call runs
  // plainly to warm up, the second captures, later calls replay); a short batch runs plainly.
  void step_inputs(int B, Adam& adam);

  // ---- inference -----------------------------------------------------------------------------
  // pred_offset [B,L,out] in backend memory (nullable: read last_prediction()). log_var (nullable,
  // backend memory [B,L,out]): the variance head's log variances; throws without a head.
  void forward(const float* context, const float* noisy_line, int B, int P, int L, float* pred_offset,
               const float* local = nullptr, float* log_var = nullptr);
  const float* last_prediction() const;  // backend memory, [B,L,out] of the last forward
  // Backend memory, [B,G] of the last forward: the point of each encoder channel's maximum (the
  // first one attaining it), for checks against other implementations of the max.
  const int32_t* last_argmax() const;
  // Backend memory, [B,L,C]: the same for the local branch's max over K (throws without one).
  const int32_t* last_local_argmax() const;
  // Compact encoder rows of the last forward_backward: the distinct argmax rows of active
  // channels on the CPU; the padded capacity on CUDA (host read; CUDA waits).
  int64_t last_compact_rows() const;

  // ---- loss ------------------------------------------------------------------------------------
  // request_loss enqueues a copy of the loss bookkeeping (sum and count since the previous
  // request, and the last step's loss) and resets it; poll_loss returns true once it landed
  // (the CPU: at once; wait: block until it has). One request at a time.
  void request_loss();
  bool poll_loss(float* mean, float* last, int* steps, bool wait = false);
  bool loss_pending() const;
  // Waits: the mean since the previous request (NaN when no step ran).
  float read_loss(int* steps = nullptr);

  // ---- introspection -----------------------------------------------------------------------------
  // CUDA: when non-null, the GEMM shapes of following steps are appended here.
  void record_gemms(std::vector<cuda::GemmShape>* out);
  size_t backend_bytes() const;  // params, grads, workspace (Adam's state is the Adam's)

 private:
  struct Impl;
  ModelConfig cfg_;
  std::vector<ParamInfo> table_;
  size_t n_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sl
