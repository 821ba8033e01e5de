"""Writes <root>/build/compile_commands.json: one entry for each source under
<root>/src, with <root>/include on the include path and the remaining
arguments as flags."""
import json
import os
import sys

root, flags = sys.argv[1], sys.argv[2:]
flags = flags + ["-I", os.path.join(root, "include")]
entries = [{"directory": root, "file": "src/" + name,
            "arguments": ["c++"] + flags + ["-c", "src/" + name]}
           for name in sorted(os.listdir(os.path.join(root, "src")))]
os.makedirs(os.path.join(root, "build"), exist_ok=True)
with open(os.path.join(root, "build", "compile_commands.json"), "w") as f:
    json.dump(entries, f, indent=1)
