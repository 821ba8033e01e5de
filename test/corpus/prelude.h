// Every header a corpus program may include. The unity translation units
// (gen_unity.py) include this first and then each program inside its own
// namespace, where these headers' include guards make the programs' own
// #include lines no-ops. run_corpus.py refuses a program that includes a
// header missing here.
#pragma once

#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>
