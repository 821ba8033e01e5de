// corpus-runner <program>: runs one corpus program, by name, as if it were
// its own executable (under torchrun, one process per rank). The programs
// are compiled into this binary by the unity translation units that
// gen_unity.py writes next to table.inc.
#include <cstdio>
#include <cstring>

#include "table.inc"

namespace {
struct Program {
  const char *name;
  int (*main)();
};
const Program kPrograms[] = {CORPUS_PROGRAMS};
} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Program *p = kPrograms; p->name; ++p)
      std::printf("%s\n", p->name);
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <program> | --list\n", argv[0]);
    return 2;
  }
  for (const Program *p = kPrograms; p->name; ++p)
    if (std::strcmp(p->name, argv[1]) == 0)
      return p->main();
  std::fprintf(stderr, "%s: no corpus program '%s' (--list names them)\n", argv[0], argv[1]);
  return 2;
}
