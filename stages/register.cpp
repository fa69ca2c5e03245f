// The stages that ship with streamline. Each stage file registers its own schema.
#include "graph/registry.h"

namespace sl {

void register_scan_stage(StageRegistry& r);
void register_batch_stages(StageRegistry& r);
void register_null_sinks(StageRegistry& r);
void register_read_stages(StageRegistry& r);
void register_geometry_stages(StageRegistry& r);
void register_train_stages(StageRegistry& r);
void register_eval_stage(StageRegistry& r);
void register_sample_cache_stages(StageRegistry& r);
void register_device_stages(StageRegistry& r);

void register_builtin_stages(StageRegistry& r) {
  register_scan_stage(r);
  register_read_stages(r);
  register_geometry_stages(r);
  register_batch_stages(r);
  register_device_stages(r);
  register_train_stages(r);
  register_eval_stage(r);
  register_sample_cache_stages(r);
  register_null_sinks(r);
}

}  // namespace sl
