# lit configuration for ddpguard's checker, CLI and clangd tests.
import os
import shutil
import tempfile
import lit.formats

config.name = "ddpguard"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".cpp", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ddpguard_binary_dir, "test", "lit")

inputs = os.path.join(config.test_source_root, "Inputs")
check = os.path.join(config.test_source_root, "check_ddpguard.py")
filecheck = os.path.join(config.llvm_tools_dir, "FileCheck")
config.substitutions.append(("%inputs", inputs))
# DDPGUARD_LIT_MOCK_INCLUDE=-I includes the mock LibTorch as the user's own
# headers: the whole suite must give the same results (LibTorch is known by
# its namespaces, not by how it is included).
mock_include = os.environ.get("DDPGUARD_LIT_MOCK_INCLUDE", "-isystem")
if mock_include not in ("-isystem", "-I"):
    lit_config.fatal(f"DDPGUARD_LIT_MOCK_INCLUDE={mock_include!r}: expected -isystem or -I")
config.substitutions.append((
    "%mock_flags", f"-std=c++17 {mock_include} " + os.path.join(inputs, "mock")))
config.substitutions.append((
    "%check_ddpguard",
    f"{config.python} {check} --clang-tidy={config.clang_tidy} "
    f"--plugin={config.tidy_plugin} --ddpguard={config.ddpguard} "
    f"--filecheck={filecheck}"))
config.substitutions.append((
    "%expect_exit", f"{config.python} " + os.path.join(config.test_source_root, "expect_exit.py")))
config.substitutions.append(("%ddpguard_clangd", config.ddpguard_clangd))
# ddpguard-lsp (python/ddpguard/lsp) from the source tree, with the venv's
# pygls (before %ddpguard, which it starts with).
config.substitutions.append((
    "%ddpguard_lsp",
    (shutil.which("env") or "env") + " PYTHONPATH="
    + os.path.join(config.ddpguard_source_dir, "python") + " "
    + os.path.join(config.ddpguard_source_dir, ".venv", "bin", "python")
    + " -m ddpguard.lsp"))
# Neovim (Debian's neovim, installed by scripts/setup.sh) as an LSP client.
config.substitutions.append(("%nvim", shutil.which("nvim") or "nvim"))
if shutil.which("nvim"):
    config.available_features.add("nvim")
config.substitutions.append(("%ddpguard", config.ddpguard))
config.substitutions.append(("%clang_tidy", config.clang_tidy))
config.substitutions.append(("%tidy_plugin", config.tidy_plugin))
config.substitutions.append(("%clangxx", config.clangxx))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%src_root", config.ddpguard_source_dir))
config.substitutions.append(("%build_root", config.ddpguard_binary_dir))
config.substitutions.append(("%rules", os.path.join(config.ddpguard_source_dir, "rewrite-rules")))
config.substitutions.append(("%FileCheck", filecheck))
config.substitutions.append(("%not", os.path.join(config.llvm_tools_dir, "not")))
config.substitutions.append((
    "%clang_apply_replacements",
    os.path.join(config.llvm_tools_dir, "clang-apply-replacements")))

# scripts/test.sh --full: the tests CI leaves out for time.
if os.environ.get("DDPGUARD_LIT_FULL") == "1":
    config.available_features.add("full")

# /usr/include is searched already; naming it with -isystem breaks
# libstdc++'s #include_next.
torch_dirs = [d for d in config.torch_include_dirs.split(";")
              if d and os.path.normpath(d) != "/usr/include"]
if torch_dirs and os.path.isdir(config.runtime_include_dir):
    config.available_features.add("libtorch")
    config.substitutions.append((
        "%torch_flags",
        "-std=c++17 -DUSE_C10D_GLOO -DUSE_DISTRIBUTED "
        + " ".join("-isystem " + d for d in torch_dirs)
        + " -I" + config.runtime_include_dir))
    # The same headers as the user's own, as a Makefile or an unpacked
    # LibTorch zip includes them.
    config.substitutions.append((
        "%torch_user_flags",
        "-std=c++17 -DUSE_C10D_GLOO -DUSE_DISTRIBUTED "
        + " ".join("-I" + d for d in torch_dirs)
        + " -I" + config.runtime_include_dir))

# LibTorch 2.15's real headers, where scripts/setup.sh installed the wheel in
# .venvs/torch-2.15.0: 2.14+ headers need C++20.
import glob
torch215 = sorted(glob.glob(os.path.join(
    config.ddpguard_source_dir, ".venvs", "torch-2.15.0", "lib", "python3*",
    "site-packages", "torch", "include")))
if torch215 and os.path.isdir(config.runtime_include_dir):
    config.available_features.add("libtorch-2.15")
    config.substitutions.append((
        "%torch215_flags",
        "-std=c++20 -DUSE_C10D_GLOO -DUSE_DISTRIBUTED"
        f" -isystem {torch215[0]} -isystem {torch215[0]}/torch/csrc/api/include"
        " -I" + config.runtime_include_dir))

# A scratch directory outside any build tree, so that no compile_commands.json
# is found above it.
config.substitutions.append(("%outside_tmp", tempfile.mkdtemp(prefix="ddpguard-lit-")))

# The project venv's Python (scripts/setup.sh) with jsonschema, and the SARIF
# 2.1.0 schema shipped in third_party/sarif-schema/.
config.substitutions.append((
    "%venv_python", os.path.join(config.ddpguard_source_dir, ".venv", "bin", "python")))
config.substitutions.append((
    "%oasis_sarif_schema",
    os.path.join(config.ddpguard_source_dir, "third_party", "sarif-schema", "sarif-schema-2.1.0.json")))
