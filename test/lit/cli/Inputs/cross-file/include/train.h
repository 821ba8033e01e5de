#include <nets.h>

void trainStep(DDP &m, torch::Tensor a, torch::Tensor b);
void trainLoop(DDP &m, torch::Tensor a);
void quietStep(DDP &m, torch::Tensor a, torch::Tensor b);
