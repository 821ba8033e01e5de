// The wrapper's type comes out of a macro.
#pragma once
#include <nets.h>

#define WRAP(Module) ddpguard::DistributedDataParallel<Module>
