"""write-config.py DIR VALUE: DIR/.clang-tidy enabling the check with
AssumeModulesHaveBuffers set to VALUE."""
import os
import sys

directory, value = sys.argv[1], sys.argv[2]
os.makedirs(directory, exist_ok=True)
with open(os.path.join(directory, ".clang-tidy"), "w") as f:
    f.write("Checks: '-*,ddp-multiple-forward-before-backward'\n"
            "CheckOptions:\n"
            "  ddp-multiple-forward-before-backward.AssumeModulesHaveBuffers: "
            f"'{value}'\n")
