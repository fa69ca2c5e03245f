// train_step (sink): the LineRefiner trained on every batch. What other code (infer, eval,
// the CLI, tests) needs of a training run lives beside it: stages/train/checkpoints.h (the
// checkpoint folder, its metadata, the model widths) and stages/train/eval_step.h.
#pragma once

namespace sl {

class StageRegistry;
void register_train_stages(StageRegistry& r);

}  // namespace sl
