//===- Ops.cpp ------------------------------------------------------------===//

#include "Ops.h"
#include "llvm/ADT/STLExtras.h"

namespace ddpguard {
namespace torch {

namespace {
const SavedOp SavedOps[] = {
#define SAVED_OP(Name, Form, Result, Saves)                                    \
  {Name, SavedOpForm::Form, SavedOpResult::Result, Saves},
#include "SavedOperands.def"
};
} // namespace

const SavedOp *findSavedOp(StringRef Name, SavedOpForm Called) {
  const SavedOp *AnyForm = nullptr;
  for (const SavedOp &Op : SavedOps) {
    if (Op.Name != Name)
      continue;
    if (Op.Form == Called)
      return &Op;
    if (Op.Form == SavedOpForm::Any && !AnyForm)
      AnyForm = &Op;
  }
  return AnyForm;
}

llvm::SmallVector<SaveRule, 2> saveRules(StringRef Saves) {
  llvm::SmallVector<SaveRule, 2> Rules;
  llvm::SmallVector<StringRef, 4> Parts;
  Saves.split(Parts, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef Part : Parts) {
    auto [Saved, Triggers] = Part.split(':');
    SaveRule Rule;
    if (Saved != "r")
      Rule.Operand = Saved.front() - '0';
    for (char Trigger : Triggers)
      Rule.Triggers.push_back(Trigger - '0');
    Rules.push_back(std::move(Rule));
  }
  return Rules;
}

bool isViewMethod(StringRef Name) {
  if (const SavedOp *Op = findSavedOp(Name, SavedOpForm::Method))
    return Op->Result == SavedOpResult::View;
  return llvm::is_contained({"float", "double", "half", "bfloat16", "cuda",
                             "cpu", "type", "movedim", "swapaxes", "unflatten",
                             "unfold"},
                            Name);
}

bool hasOutOfPlaceTwin(StringRef Method) {
  return llvm::is_contained(
      {"add_", "sub_", "mul_", "div_", "clamp_", "clamp_min_", "clamp_max_",
       "clip_", "relu_", "sigmoid_", "tanh_", "exp_", "log_", "abs_", "neg_",
       "sqrt_", "rsqrt_", "pow_", "masked_fill_", "index_put_", "index_fill_",
       "index_add_", "index_copy_", "scatter_", "scatter_add_", "lerp_",
       "addcmul_", "addcdiv_", "square_", "reciprocal_", "floor_", "round_",
       "sign_", "sin_", "cos_", "nan_to_num_", "true_divide_", "multiply_",
       "subtract_", "divide_", "masked_scatter_", "put_", "addmm_", "addmv_",
       "baddbmm_"},
      Method);
}

} // namespace torch
} // namespace ddpguard
