// Host side of the CUDA LineRefiner: buffer management, the op sequence (mirroring
// LineRefiner::forward_backward in kernels/model.cpp) and CUDA-graph capture. Plain C++ against
// the CUDA runtime API; the kernels are in ops_cuda.cu. Empty in builds without CUDA.
#ifdef SL_WITH_CUDA
#include "kernels/cuda/line_refiner_cuda.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/workspace_layout.h"

namespace sl {

namespace {

struct Layer {
  int in, out;
  size_t w, b;  // offsets (floats) of weight and bias in the parameter buffer
};

// Device state block (kDeviceStateBytes): byte offsets.
constexpr size_t kLossSumOff = 0;    // double
constexpr size_t kLossCountOff = 8;  // int
constexpr size_t kLastLossOff = 12;  // float
constexpr size_t kStepOff = 16;      // int64
constexpr size_t kScalarsOff = 24;   // float[2]: Adam step size, sqrt(bias correction 2)
static_assert(kScalarsOff + 8 <= kDeviceStateBytes);

struct HostLoss {  // pinned mirror of the first 16 bytes of the state block
  double sum;
  int count;
  float last;
};

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

struct CudaLineRefiner::Impl {
  struct Shape {
    int B = 0, P = 0, L = 0;
    WorkspaceLayout layout;
    float* mem = nullptr;
    bool warmed = false;
    cudaGraphExec_t exec = nullptr;
    float* at(const std::string& name) const { return mem + layout.at(name).offset; }
  };

  ModelConfig cfg;
  CudaModelOptions opt;
  std::vector<ParamInfo> table;
  std::vector<Layer> enc, line, reg;
  size_t n = 0;
  float *params = nullptr, *grads = nullptr, *m = nullptr, *v = nullptr;
  char* state = nullptr;
  HostLoss* host_loss = nullptr;
  cudaEvent_t loss_event = nullptr;
  bool loss_pending = false;
  std::unique_ptr<cuda::Blas> blas;
  std::map<std::tuple<int, int, int>, std::unique_ptr<Shape>> shapes;
  Shape* current = nullptr;
  std::vector<cuda::GemmShape> gemms;

  void use_device() const { SL_CUDA_CHECK(cudaSetDevice(opt.device)); }

  cuda::LossState loss_state() const {
    return {reinterpret_cast<double*>(state + kLossSumOff),
            reinterpret_cast<int*>(state + kLossCountOff),
            reinterpret_cast<float*>(state + kLastLossOff)};
  }
  int64_t* step_ptr() const { return reinterpret_cast<int64_t*>(state + kStepOff); }
  float* scalars_ptr() const { return reinterpret_cast<float*>(state + kScalarsOff); }

  void drop_graphs() {
    for (auto& [k, s] : shapes)
      if (s->exec) {
        cudaGraphExecDestroy(s->exec);
        s->exec = nullptr;
      }
  }

  Shape& cur() const {
    if (!current) fail("CudaLineRefiner", "no shape prepared yet: call prepare(B, P, L) first");
    return *current;
  }

  Shape& shape(int B, int P, int L) {
    auto& slot = shapes[{B, P, L}];
    if (!slot) {
      auto s = std::make_unique<Shape>();
      s->B = B, s->P = P, s->L = L;
      s->layout = cuda_workspace_layout(cfg, B, P, L);
      SL_CUDA_CHECK(cudaMalloc(&s->mem, s->layout.bytes()));
      // Everything zero (so unwritten padding is never garbage), the ones vector all 1.0f.
      SL_CUDA_CHECK(cudaMemset(s->mem, 0, s->layout.bytes()));
      const WorkspaceBuffer& ones = s->layout.at("ones");
      cuda::fill(s->mem + ones.offset, 1.f, ones.floats, nullptr);
      SL_CUDA_CHECK(cudaStreamSynchronize(nullptr));
      slot = std::move(s);
    }
    current = slot.get();
    return *slot;
  }

  // ---- the op sequence --------------------------------------------------------------------
  void enqueue_forward(const Shape& S, const float* ctx, const float* noisy, void* st) {
    const int B = S.B, P = S.P, L = S.L;
    const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
    const int G = cfg.encoder.back(), F = cfg.line_mlp.back();
    const float* in = ctx;
    for (size_t i = 0; i < enc.size(); ++i) {
      const Layer& l = enc[i];
      if (i + 1 < enc.size()) {
        float* out = S.at("enc.act." + std::to_string(i));
        cuda::linear_forward(*blas, out, in, params + l.w, params + l.b, NP, l.in, l.out, true, st);
        in = out;
      } else {
        cuda::linear_relu_max_forward(*blas, S.at("global"),
                                      reinterpret_cast<int32_t*>(S.at("argmax")),
                                      S.at("enc.pre_max"), in, params + l.w, params + l.b, B, P,
                                      l.in, l.out, st);
      }
    }
    in = noisy;
    for (size_t i = 0; i < line.size(); ++i) {
      float* out = S.at("line.act." + std::to_string(i));
      cuda::linear_forward(*blas, out, in, params + line[i].w, params + line[i].b, NL, line[i].in,
                           line[i].out, true, st);
      in = out;
    }
    cuda::concat_forward(S.at("cat"), S.at("global"), in, B, L, G, F, st);
    in = S.at("cat");
    for (size_t i = 0; i < reg.size(); ++i) {
      float* out = S.at("reg.act." + std::to_string(i));
      cuda::linear_forward(*blas, out, in, params + reg[i].w, params + reg[i].b, NL, reg[i].in,
                           reg[i].out, i + 1 < reg.size(), st);
      in = out;
    }
  }

  void enqueue_step(const Shape& S, const float* ctx, const float* noisy, const float* target,
                    void* st) {
    const int B = S.B, P = S.P, L = S.L;
    const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
    const int G = cfg.encoder.back(), F = cfg.line_mlp.back();
    blas->bind(st);
    enqueue_forward(S, ctx, noisy, st);

    // Every backward accumulates: zero the parameter gradients and the activation-gradient
    // region of the workspace (contiguous: from the first *.grad / dglobal buffer to "ones").
    SL_CUDA_CHECK(cudaMemsetAsync(grads, 0, n * sizeof(float), as_stream(st)));
    {
      const size_t lo = S.layout.at(enc.size() > 1 ? "enc.grad.0" : "dglobal").offset;
      const size_t hi = S.layout.at("ones").offset;
      SL_CUDA_CHECK(cudaMemsetAsync(S.mem + lo, 0, (hi - lo) * sizeof(float), as_stream(st)));
    }

    const std::string last = std::to_string(reg.size() - 1);
    const float* pred = S.at("reg.act." + last);
    const int64_t n_out = NL * cfg.out_channels;
    cuda::mse_loss(loss_state(), pred, target, n_out, st);
    cuda::mse_backward(S.at("reg.grad." + last), pred, target, n_out, st);
    const float* ones = S.at("ones");

    // regressor, reverse; layer 0 reads the concat
    for (size_t i = reg.size(); i-- > 0;) {
      const std::string si = std::to_string(i);
      float* din = i > 0 ? S.at("reg.grad." + std::to_string(i - 1)) : S.at("dcat");
      const float* in = i > 0 ? S.at("reg.act." + std::to_string(i - 1)) : S.at("cat");
      cuda::linear_backward(*blas, din, grads + reg[i].w, grads + reg[i].b, S.at("reg.grad." + si),
                            S.at("reg.act." + si), in, params + reg[i].w, ones, NL, reg[i].in,
                            reg[i].out, i + 1 < reg.size(), st);
    }
    const std::string last_line = std::to_string(line.size() - 1);
    cuda::concat_backward(S.at("dglobal"), S.at("line.grad." + last_line), S.at("dcat"), B, L, G,
                          F, st);
    // line MLP, reverse (no gradient for the network input)
    for (size_t i = line.size(); i-- > 0;) {
      const std::string si = std::to_string(i);
      float* din = i > 0 ? S.at("line.grad." + std::to_string(i - 1)) : nullptr;
      const float* in = i > 0 ? S.at("line.act." + std::to_string(i - 1)) : noisy;
      cuda::linear_backward(*blas, din, grads + line[i].w, grads + line[i].b,
                            S.at("line.grad." + si), S.at("line.act." + si), in,
                            params + line[i].w, ones, NL, line[i].in, line[i].out, true, st);
    }
    // encoder: the fused max layer scatters to its argmax rows (dense layout), then the dense
    // layers run over all B*P rows (rows that are not argmax rows carry zero gradient).
    const size_t nE = enc.size();
    {
      const Layer& l = enc[nE - 1];
      float* din = nE > 1 ? S.at("enc.grad." + std::to_string(nE - 2)) : nullptr;
      const float* in = nE > 1 ? S.at("enc.act." + std::to_string(nE - 2)) : ctx;
      cuda::linear_relu_max_backward(din, grads + l.w, grads + l.b, S.at("dglobal"), S.at("global"),
                                     reinterpret_cast<const int32_t*>(S.at("argmax")), in,
                                     params + l.w, B, P, l.in, l.out, st);
    }
    for (size_t i = nE - 1; i-- > 0;) {
      const std::string si = std::to_string(i);
      float* din = i > 0 ? S.at("enc.grad." + std::to_string(i - 1)) : nullptr;
      const float* in = i > 0 ? S.at("enc.act." + std::to_string(i - 1)) : ctx;
      cuda::linear_backward(*blas, din, grads + enc[i].w, grads + enc[i].b, S.at("enc.grad." + si),
                            S.at("enc.act." + si), in, params + enc[i].w, ones, NP, enc[i].in,
                            enc[i].out, true, st);
    }

    cuda::adam_advance_step(step_ptr(), scalars_ptr(), opt.adam, st);
    cuda::adam_update(params, m, v, grads, n, scalars_ptr(), opt.adam, st);
  }

  void copy_sync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, void* st) {
    use_device();
    SL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, as_stream(st)));
    SL_CUDA_CHECK(cudaStreamSynchronize(as_stream(st)));
  }

  void release() {
    cudaSetDevice(opt.device);
    cudaDeviceSynchronize();  // never free memory a queued kernel may still touch
    drop_graphs();
    for (auto& [k, s] : shapes) cudaFree(s->mem);
    shapes.clear();
    for (void* p : {(void*)params, (void*)grads, (void*)m, (void*)v, (void*)state})
      if (p) cudaFree(p);
    if (host_loss) cudaFreeHost(host_loss);
    if (loss_event) cudaEventDestroy(loss_event);
    blas.reset();
  }
};

CudaLineRefiner::CudaLineRefiner(const ModelConfig& cfg, const float* init_params,
                                 CudaModelOptions opt)
    : impl_(std::make_unique<Impl>()) {
  Impl& I = *impl_;
  I.cfg = cfg;
  I.opt = opt;
  I.table = make_param_table(cfg);
  I.n = I.table.back().offset + I.table.back().numel;
  size_t ti = 0;
  auto take = [&](std::vector<Layer>& dst, int first_in, const std::vector<int>& widths) {
    int prev = first_in;
    for (int w : widths) {
      dst.push_back({prev, w, I.table[ti].offset, I.table[ti + 1].offset});
      ti += 2;
      prev = w;
    }
  };
  take(I.enc, cfg.in_channels, cfg.encoder);
  take(I.line, cfg.line_channels, cfg.line_mlp);
  std::vector<int> reg = cfg.regressor;
  reg.push_back(cfg.out_channels);
  take(I.reg, cfg.encoder.back() + cfg.line_mlp.back(), reg);

  try {
    I.use_device();
    const size_t bytes = I.n * sizeof(float);
    SL_CUDA_CHECK(cudaMalloc(&I.params, bytes));
    SL_CUDA_CHECK(cudaMalloc(&I.grads, bytes));
    SL_CUDA_CHECK(cudaMalloc(&I.m, bytes));
    SL_CUDA_CHECK(cudaMalloc(&I.v, bytes));
    SL_CUDA_CHECK(cudaMalloc(&I.state, kDeviceStateBytes));
    SL_CUDA_CHECK(cudaMemcpy(I.params, init_params, bytes, cudaMemcpyHostToDevice));
    SL_CUDA_CHECK(cudaMemset(I.grads, 0, bytes));
    SL_CUDA_CHECK(cudaMemset(I.m, 0, bytes));
    SL_CUDA_CHECK(cudaMemset(I.v, 0, bytes));
    SL_CUDA_CHECK(cudaMemset(I.state, 0, kDeviceStateBytes));
    SL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&I.host_loss), sizeof(HostLoss),
                                cudaHostAllocDefault));
    SL_CUDA_CHECK(cudaEventCreateWithFlags(&I.loss_event, cudaEventDisableTiming));
    I.blas = std::make_unique<cuda::Blas>(opt.device, cuda::parse_precision(opt.precision));
    SL_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    I.release();
    throw;
  }
}

CudaLineRefiner::~CudaLineRefiner() {
  if (impl_) impl_->release();
}
CudaLineRefiner::CudaLineRefiner(CudaLineRefiner&&) noexcept = default;
CudaLineRefiner& CudaLineRefiner::operator=(CudaLineRefiner&& o) noexcept {
  if (this != &o) {
    if (impl_) impl_->release();
    impl_ = std::move(o.impl_);
  }
  return *this;
}

const ModelConfig& CudaLineRefiner::config() const { return impl_->cfg; }
size_t CudaLineRefiner::num_params() const { return impl_->n; }

void CudaLineRefiner::upload_params(const float* host, void* stream) {
  impl_->copy_sync(impl_->params, host, impl_->n * sizeof(float), cudaMemcpyHostToDevice, stream);
}
void CudaLineRefiner::download_params(float* host, void* stream) {
  impl_->copy_sync(host, impl_->params, impl_->n * sizeof(float), cudaMemcpyDeviceToHost, stream);
}
void CudaLineRefiner::download_grads(float* host, void* stream) {
  impl_->copy_sync(host, impl_->grads, impl_->n * sizeof(float), cudaMemcpyDeviceToHost, stream);
}

int64_t CudaLineRefiner::download_adam(float* exp_avg, float* exp_avg_sq, void* stream) {
  Impl& I = *impl_;
  I.copy_sync(exp_avg, I.m, I.n * sizeof(float), cudaMemcpyDeviceToHost, stream);
  I.copy_sync(exp_avg_sq, I.v, I.n * sizeof(float), cudaMemcpyDeviceToHost, stream);
  return step_count(stream);
}

void CudaLineRefiner::upload_adam(const float* exp_avg, const float* exp_avg_sq, int64_t step,
                                  void* stream) {
  Impl& I = *impl_;
  I.copy_sync(I.m, exp_avg, I.n * sizeof(float), cudaMemcpyHostToDevice, stream);
  I.copy_sync(I.v, exp_avg_sq, I.n * sizeof(float), cudaMemcpyHostToDevice, stream);
  I.copy_sync(I.step_ptr(), &step, sizeof(step), cudaMemcpyHostToDevice, stream);
}

int64_t CudaLineRefiner::step_count(void* stream) {
  int64_t t = 0;
  impl_->copy_sync(&t, impl_->step_ptr(), sizeof(t), cudaMemcpyDeviceToHost, stream);
  return t;
}

void CudaLineRefiner::set_adam(const AdamConfig& cfg) {
  impl_->use_device();
  impl_->opt.adam = cfg;
  impl_->drop_graphs();
}

void CudaLineRefiner::set_precision(const std::string& precision) {
  impl_->use_device();
  impl_->blas->set_precision(cuda::parse_precision(precision));
  impl_->opt.precision = precision;
  impl_->drop_graphs();
}

void CudaLineRefiner::prepare(int B, int P, int L) {
  impl_->use_device();
  impl_->shape(B, P, L);
}

float* CudaLineRefiner::input_context() { return impl_->cur().at("input.context"); }
float* CudaLineRefiner::input_noisy() { return impl_->cur().at("input.noisy_line"); }
float* CudaLineRefiner::input_target() { return impl_->cur().at("input.target_offset"); }

void CudaLineRefiner::load_inputs(const float* d_context, const float* d_noisy,
                                  const float* d_target, int B, int P, int L, void* stream) {
  Impl& I = *impl_;
  I.use_device();
  Impl::Shape& S = I.shape(B, P, L);
  const cudaStream_t st = as_stream(stream);
  const size_t NP = size_t(B) * P, NL = size_t(B) * L;
  SL_CUDA_CHECK(cudaMemcpyAsync(S.at("input.context"), d_context,
                                NP * I.cfg.in_channels * sizeof(float), cudaMemcpyDeviceToDevice, st));
  SL_CUDA_CHECK(cudaMemcpyAsync(S.at("input.noisy_line"), d_noisy,
                                NL * I.cfg.line_channels * sizeof(float), cudaMemcpyDeviceToDevice, st));
  SL_CUDA_CHECK(cudaMemcpyAsync(S.at("input.target_offset"), d_target,
                                NL * I.cfg.out_channels * sizeof(float), cudaMemcpyDeviceToDevice, st));
}

void CudaLineRefiner::step(const float* d_context, const float* d_noisy, const float* d_target,
                           int B, int P, int L, void* stream) {
  SL_NVTX_RANGE("CudaLineRefiner::step");
  Impl& I = *impl_;
  I.use_device();
  Impl::Shape& S = I.shape(B, P, L);
  I.gemms.clear();
  I.blas->record = &I.gemms;
  try {
    I.enqueue_step(S, d_context, d_noisy, d_target, stream);
  } catch (...) {
    I.blas->record = nullptr;
    throw;
  }
  I.blas->record = nullptr;
  S.warmed = true;
}

void CudaLineRefiner::step_graph(int B, int P, int L, void* stream) {
  SL_NVTX_RANGE("CudaLineRefiner::step_graph");
  Impl& I = *impl_;
  if (stream == nullptr)
    fail("CudaLineRefiner::step_graph", "needs a created stream (the legacy null stream cannot be captured)");
  I.use_device();
  Impl::Shape& S = I.shape(B, P, L);
  const cudaStream_t st = as_stream(stream);
  if (!S.exec) {
    if (!S.warmed) {  // warm-up: a real, plain step
      step(S.at("input.context"), S.at("input.noisy_line"), S.at("input.target_offset"), B, P, L,
           stream);
      return;
    }
    // ThreadLocal: other threads of the engine may keep calling CUDA (event queries, pinned
    // allocations) while this thread captures.
    SL_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      I.enqueue_step(S, S.at("input.context"), S.at("input.noisy_line"),
                     S.at("input.target_offset"), stream);
    } catch (...) {
      cudaStreamEndCapture(st, &graph);  // leave the stream usable; the error is the first one
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    SL_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
    const cudaError_t e = cudaGraphInstantiate(&S.exec, graph, 0);
    cudaGraphDestroy(graph);
    SL_CUDA_CHECK(e);
  }
  SL_CUDA_CHECK(cudaGraphLaunch(S.exec, st));
}

void CudaLineRefiner::forward(const float* d_context, const float* d_noisy, int B, int P, int L,
                              float* d_pred, void* stream) {
  SL_NVTX_RANGE("CudaLineRefiner::forward");
  Impl& I = *impl_;
  I.use_device();
  Impl::Shape& S = I.shape(B, P, L);
  I.blas->bind(stream);
  I.enqueue_forward(S, d_context, d_noisy, stream);
  if (d_pred) {
    const float* pred = S.at("reg.act." + std::to_string(I.reg.size() - 1));
    SL_CUDA_CHECK(cudaMemcpyAsync(d_pred, pred, size_t(B) * L * I.cfg.out_channels * sizeof(float),
                                  cudaMemcpyDeviceToDevice, as_stream(stream)));
  }
}

const float* CudaLineRefiner::prediction() const {
  Impl& I = *impl_;
  return I.cur().at("reg.act." + std::to_string(I.reg.size() - 1));
}

void CudaLineRefiner::request_loss(void* stream) {
  Impl& I = *impl_;
  if (I.loss_pending) fail("CudaLineRefiner::request_loss", "the previous request was not taken yet (poll_loss)");
  I.use_device();
  const cudaStream_t st = as_stream(stream);
  SL_CUDA_CHECK(cudaMemcpyAsync(I.host_loss, I.state, sizeof(HostLoss), cudaMemcpyDeviceToHost, st));
  SL_CUDA_CHECK(cudaMemsetAsync(I.state, 0, kLastLossOff, st));  // sum and count; keep `last`
  SL_CUDA_CHECK(cudaEventRecord(I.loss_event, st));
  I.loss_pending = true;
}

bool CudaLineRefiner::poll_loss(float* mean, int* steps) {
  Impl& I = *impl_;
  if (!I.loss_pending) fail("CudaLineRefiner::poll_loss", "no loss was requested");
  I.use_device();
  const cudaError_t e = cudaEventQuery(I.loss_event);
  if (e == cudaErrorNotReady) return false;
  SL_CUDA_CHECK(e);
  I.loss_pending = false;
  const HostLoss h = *I.host_loss;
  if (steps) *steps = h.count;
  if (mean)
    *mean = h.count > 0 ? float(h.sum / h.count) : std::numeric_limits<float>::quiet_NaN();
  return true;
}

float CudaLineRefiner::read_loss_and_reset(void* stream, int* steps) {
  request_loss(stream);
  SL_CUDA_CHECK(cudaEventSynchronize(impl_->loss_event));
  float mean = 0.f;
  poll_loss(&mean, steps);
  return mean;
}

const std::vector<cuda::GemmShape>& CudaLineRefiner::last_step_gemms() const { return impl_->gemms; }

size_t CudaLineRefiner::device_bytes() const {
  const Impl& I = *impl_;
  size_t b = 4 * I.n * sizeof(float) + kDeviceStateBytes + kCublasWorkspaceBytes;
  for (const auto& [k, s] : I.shapes) b += s->layout.bytes();
  return b;
}

}  // namespace sl
#endif  // SL_WITH_CUDA
