"""Writes <root>/build/compile_commands.json for the sources under <root>/src:
one entry each, and where they exist, plain.cpp again (two commands, one
translation unit) and an entry for include/util.h (not a translation unit)."""
import json
import os
import sys

root, mock = sys.argv[1], sys.argv[2]
flags = ["-std=c++17", "-isystem", mock, "-I", os.path.join(root, "include")]
entries = []
for name in sorted(os.listdir(os.path.join(root, "src"))):
    entries.append({"directory": root, "file": "src/" + name,
                    "arguments": ["c++"] + flags + ["-c", "src/" + name]})
if os.path.exists(os.path.join(root, "src", "plain.cpp")):
    entries.append({"directory": root, "file": "src/plain.cpp",
                    "arguments": ["c++"] + flags + ["-DAGAIN", "-c", "src/plain.cpp"]})
if os.path.exists(os.path.join(root, "include", "util.h")):
    entries.append({"directory": root, "file": "include/util.h",
                    "arguments": ["c++"] + flags + ["-c", "include/util.h"]})
os.makedirs(os.path.join(root, "build"), exist_ok=True)
with open(os.path.join(root, "build", "compile_commands.json"), "w") as f:
    json.dump(entries, f, indent=1)
