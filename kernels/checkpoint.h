// Training checkpoints as safetensors: model tensors named exactly as the parameter table
// (loadable by PyTorch's load_state_dict), Adam moments as "adam.exp_avg.<name>" and
// "adam.exp_avg_sq.<name>", the Adam step as metadata "adam.step". Identical state gives
// byte-identical files.
#pragma once
#include <map>
#include <string>

#include "kernels/adam.h"
#include "kernels/model.h"
#include "kernels/safetensors.h"

namespace sl {

// adam nullable (weights only). Metadata keys "adam.step" and "format" are reserved.
void save_checkpoint(const std::string& path, const LineRefiner& model, const Adam* adam,
                     const std::map<std::string, std::string>& metadata);

// Validates everything before touching `model`/`adam` (all or nothing). Throws sl::Error naming
// the file and the tensor for: a missing tensor, a wrong shape (e.g. a model of other widths),
// a wrong dtype, an unexpected tensor, a missing/invalid adam.step when adam is given, an Adam of
// another size, or any safetensors corruption. adam nullable: weights only (Adam state in the
// file is then ignored). metadata_out nullable: receives the file's metadata.
void load_checkpoint(const std::string& path, LineRefiner& model, Adam* adam,
                     std::map<std::string, std::string>* metadata_out);
// The same from a file already read (read_safetensors(path)): `path` names it in messages.
void load_checkpoint(const StFile& file, const std::string& path, LineRefiner& model, Adam* adam,
                     std::map<std::string, std::string>* metadata_out);

}  // namespace sl
