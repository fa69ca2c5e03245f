// The Python extension module behind `import streamline` (python/streamline/__init__.py holds
// the Loader users see). It exposes the loader of loader/loader.h: a parsed pipeline, one run
// per epoch, and its batches as zero-copy arrays over the batch stage's pool slots.
//
// Memory: every array (NumPy, or DLPack for torch) of a batch holds a reference to the batch;
// its slot returns to the pool, and the batch stage continues, when the last one is released.
// Threads: the engine runs in its own threads; Run.next() waits without the GIL and checks for
// signals (Ctrl-C) every 50 ms.
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "graph/engine.h"
#include "graph/error.h"
#include "loader/loader.h"

namespace py = pybind11;

namespace sl {
namespace {

using Clock = std::chrono::steady_clock;

// One tensor of a batch as a DLPack tensor; owns a reference to the batch.
struct DLOwner {
  DLManagedTensor managed{};
  std::shared_ptr<Batch> batch;
  std::vector<int64_t> shape;
};

void delete_dl_owner(DLManagedTensor* t) { delete static_cast<DLOwner*>(t->manager_ctx); }

// The capsule protocol: a consumer (torch.utils.dlpack.from_dlpack) renames the capsule
// "used_dltensor" and calls the deleter itself when its tensor dies; an unconsumed capsule
// deletes its tensor when it is collected.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;  // consumed
  auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (t && t->deleter) t->deleter(t);
}

class PyBatch {
 public:
  explicit PyBatch(std::shared_ptr<Batch> b) : b_(std::move(b)) {}
  int64_t epoch() const { return b_->epoch; }
  int64_t index() const { return b_->index; }
  int64_t size() const { return b_->size; }
  int64_t capacity() const { return b_->capacity; }
  bool pinned() const { return b_->slot && b_->slot->pinned(); }
  py::tuple next() const { return py::make_tuple(b_->next.epoch, b_->next.index, b_->next_skip); }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& t : b_->tensors) k.push_back(t.name);
    return k;
  }
  // The tensors, [size, ...] (a last partial batch is cut to its samples), as NumPy arrays over
  // the slot; all share one owner object holding the batch.
  py::dict arrays() const {
    py::capsule owner(new std::shared_ptr<Batch>(b_), [](void* p) { delete static_cast<std::shared_ptr<Batch>*>(p); });
    py::dict d;
    for (const auto& t : b_->tensors) {
      std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
      shape[0] = (py::ssize_t)b_->size;
      d[py::str(t.name)] = py::array_t<float>(shape, b_->host(t.name), owner);
    }
    return d;
  }
  // One tensor as a DLPack capsule (CPU memory; pinned when the run uses a GPU).
  py::capsule dlpack(const std::string& name) const {
    const BatchTensor& t = b_->tensor(name);
    auto* o = new DLOwner;
    o->batch = b_;
    o->shape = t.shape;
    o->shape[0] = b_->size;
    DLTensor& d = o->managed.dl_tensor;
    d.data = b_->host(name);
    d.device = DLDevice{kDLCPU, 0};
    d.ndim = (int32_t)o->shape.size();
    d.dtype = DLDataType{kDLFloat, 32, 1};
    d.shape = o->shape.data();
    d.strides = nullptr;  // compact, row-major
    d.byte_offset = 0;
    o->managed.manager_ctx = o;
    o->managed.deleter = delete_dl_owner;
    return py::capsule(&o->managed, "dltensor", capsule_destructor);
  }
  py::array_t<int32_t> scene_index() const { return py::array_t<int32_t>((py::ssize_t)b_->scene_index.size(), b_->scene_index.data()); }
  py::array_t<int32_t> line_index() const { return py::array_t<int32_t>((py::ssize_t)b_->line_index.size(), b_->line_index.data()); }

 private:
  std::shared_ptr<Batch> b_;
};

py::dict report_dict(const RunResult& r) {
  py::dict d;
  d["ok"] = r.ok;
  d["interrupted"] = r.interrupted;
  d["error"] = r.error;
  d["wall_s"] = r.wall_s;
  d["peak_rss_bytes"] = r.peak_rss_bytes;
  py::list stages;
  for (const auto& s : r.stages) {
    py::dict x;
    x["id"] = s.id;
    x["type"] = s.type;
    x["threads"] = s.threads;
    x["items_in"] = s.items_in;
    x["items_out"] = s.items_out;
    x["skipped"] = s.skipped;
    x["busy_s"] = s.busy_s;
    x["utilization"] = s.utilization;
    x["idle_s"] = s.wait_input_s;
    x["held_s"] = s.wait_output_s;
    stages.append(x);
  }
  d["stages"] = stages;
  py::list skips;
  for (const auto& s : r.skips) {
    py::dict x;
    x["stage"] = s.stage;
    x["item"] = s.item;
    x["reason"] = s.reason;
    skips.append(x);
  }
  d["skips"] = skips;
  d["bottleneck"] = r.bottleneck;
  d["table"] = r.stages.empty() ? std::string() : format_report(r);
  return d;
}

class PyRun {
 public:
  explicit PyRun(std::unique_ptr<LoaderRun> r) : run_(std::move(r)) {}
  // The next batch, or None at the end of the epoch. Raises streamline.Error when the run failed,
  // and KeyboardInterrupt (after stopping the run) on Ctrl-C.
  py::object next() {
    const auto t0 = Clock::now();
    std::shared_ptr<Batch> b;
    int stuck = 0;  // 50 ms waits in a row with every slot held by the consumer
    for (;;) {
      LoaderRun::Got got;
      {
        py::gil_scoped_release nogil;
        got = run_->next(&b, 50);
      }
      if (got == LoaderRun::Got::Batch) {
        wait_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
        return py::cast(PyBatch(std::move(b)));
      }
      if (got == LoaderRun::Got::End) return py::none();
      if (run_->slots() > 0 && run_->held() >= run_->slots()) {
        if (++stuck == 20) {
          py::module_::import("gc").attr("collect")();  // tensors kept alive only by a reference cycle
          if (run_->held() >= run_->slots())
            throw Error("loader: all " + std::to_string(run_->slots()) +
                        " batch slots are held by tensors of earlier batches that are still referenced, so the "
                        "batch stage cannot make the next one (a batch's tensors are views of its slot). Keep "
                        "copies (tensor.clone()) of what you keep, or raise batch.slots");
          stuck = 0;
        }
      } else {
        stuck = 0;
      }
      if (PyErr_CheckSignals() != 0) {
        py::error_already_set err;  // fetched before the (GIL-free) stop
        {
          py::gil_scoped_release nogil;
          run_->stop();
        }
        throw err;
      }
    }
  }
  void stop() {
    py::gil_scoped_release nogil;
    run_->stop();
  }
  py::dict report() const { return report_dict(run_->result()); }
  int64_t held() const { return run_->held(); }
  int64_t slots() const { return run_->slots(); }
  bool interrupted() const { return run_->result().interrupted; }  // after next() returned None
  double wait_s() const { return wait_s_; }

 private:
  std::unique_ptr<LoaderRun> run_;
  double wait_s_ = 0;  // time next() spent waiting for the engine (the rest is Python's)
};

class PyPipeline {
 public:
  PyPipeline(const std::string& path, const std::vector<std::string>& overrides, int threads, int rank, int world) {
    LoaderOptions o;
    o.pipeline_path = path;
    o.overrides = overrides;
    o.threads = threads;
    o.rank = rank;
    o.world = world;
    p_ = std::make_unique<LoaderPipeline>(std::move(o));
  }
  PyRun start(int64_t epoch, int64_t index, int64_t skip) const { return PyRun(p_->start({epoch, index}, skip)); }
  const LoaderPipeline& p() const { return *p_; }

 private:
  std::unique_ptr<LoaderPipeline> p_;
};

}  // namespace
}  // namespace sl

PYBIND11_MODULE(_streamline, m) {
  using namespace sl;
  m.doc() = "streamline's engine for Python: pipelines, runs and zero-copy batches (see streamline.Loader)";
  m.attr("__version__") = SL_VERSION;
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  py::class_<PyBatch>(m, "Batch")
      .def_property_readonly("epoch", &PyBatch::epoch)
      .def_property_readonly("index", &PyBatch::index)
      .def_property_readonly("size", &PyBatch::size)
      .def_property_readonly("capacity", &PyBatch::capacity)
      .def_property_readonly("pinned", &PyBatch::pinned)
      .def_property_readonly("next", &PyBatch::next, "(epoch, index, skip): where the data continues after this batch")
      .def("keys", &PyBatch::keys)
      .def("arrays", &PyBatch::arrays, "the tensors as NumPy arrays over the slot (zero-copy)")
      .def("dlpack", &PyBatch::dlpack, py::arg("name"), "one tensor as a DLPack capsule (zero-copy)")
      .def_property_readonly("scene_index", &PyBatch::scene_index)
      .def_property_readonly("line_index", &PyBatch::line_index);
  py::class_<PyRun>(m, "Run")
      .def("next", &PyRun::next)
      .def("stop", &PyRun::stop)
      .def("report", &PyRun::report)
      .def_property_readonly("wait_s", &PyRun::wait_s)
      .def_property_readonly("held", &PyRun::held, "batches handed out and still alive (each holds a slot)")
      .def_property_readonly("slots", &PyRun::slots)
      .def_property_readonly("interrupted", &PyRun::interrupted, "the run was stopped before its end");
  py::class_<PyPipeline>(m, "Pipeline")
      .def(py::init<const std::string&, const std::vector<std::string>&, int, int, int>(), py::arg("path"),
           py::arg("overrides") = std::vector<std::string>{}, py::arg("threads") = 0, py::arg("rank") = 0,
           py::arg("world_size") = 1)
      .def("start", &PyPipeline::start, py::arg("epoch"), py::arg("index") = 0, py::arg("skip") = 0)
      .def_property_readonly("name", [](const PyPipeline& p) { return p.p().spec().name; })
      .def_property_readonly("seed", [](const PyPipeline& p) { return p.p().spec().seed; })
      .def_property_readonly("device", [](const PyPipeline& p) { return p.p().spec().device; })
      .def_property_readonly("batch_size", [](const PyPipeline& p) { return p.p().batch_size(); })
      .def_property_readonly("drop_last", [](const PyPipeline& p) { return p.p().drop_last(); })
      .def_property_readonly("rank", [](const PyPipeline& p) { return p.p().options().rank; })
      .def_property_readonly("world_size", [](const PyPipeline& p) { return p.p().options().world; })
      .def("resolved_json", [](const PyPipeline& p) { return p.p().spec().resolved_json(true); });
}
