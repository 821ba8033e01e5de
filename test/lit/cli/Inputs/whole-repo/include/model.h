// The alias is declared here; alias_user.cpp only says 'Model'.
#pragma once
#include <nets.h>

using Model = ddpguard::DistributedDataParallel<Net>;
