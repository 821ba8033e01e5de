"""pre-commit-hook.test.py DDPGUARD REPO_ROOT INPUTS TMP"""
import json
import os
import shutil
import subprocess
import sys

ddpguard, root, inputs, tmp = sys.argv[1:5]
root = os.path.realpath(root)
env = dict(os.environ)
env.update({
    "PATH": os.path.dirname(os.path.realpath(ddpguard)) + os.pathsep
            + os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    "PRE_COMMIT_HOME": os.path.join(tmp, "cache"),
    "HOME": tmp,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
})
env.pop("DDPGUARD", None)


def run(cmd, cwd, ok=True):
    result = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    if ok and result.returncode != 0:
        sys.exit(f"{cmd} failed ({result.returncode}):\n{result.stdout}")
    return result


# The hook's repository: this project's hook definition and entry script.
hooks = os.path.join(tmp, "hooks")
os.makedirs(os.path.join(hooks, "integrations", "pre-commit"))
shutil.copy(os.path.join(root, ".pre-commit-hooks.yaml"), hooks)
shutil.copy(os.path.join(root, "integrations", "pre-commit", "ddpguard-hook"),
            os.path.join(hooks, "integrations", "pre-commit"))
run(["git", "init", "-q", "-b", "main"], hooks)
run(["git", "add", "."], hooks)
run(["git", "commit", "-q", "-m", "hooks"], hooks)
rev = run(["git", "rev-parse", "HEAD"], hooks).stdout.strip()

# The project: a compilation database in build/ (not committed), the hook
# configured with -p build.
proj = os.path.join(tmp, "proj")
os.makedirs(os.path.join(proj, "build"))
run(["git", "init", "-q", "-b", "main"], proj)
mock = os.path.join(inputs, "mock")
sources = ["clean.cpp", "train.cpp"]
with open(os.path.join(proj, "build", "compile_commands.json"), "w") as f:
    json.dump([{"directory": proj, "file": name,
                "arguments": ["clang++", "-std=c++17", "-isystem", mock, "-c", name]}
               for name in sources], f)


def config(args):
    return (f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n"
            f"  - id: ddpguard\n    args: {json.dumps(args)}\n")


with open(os.path.join(proj, ".pre-commit-config.yaml"), "w") as f:
    f.write(config(["-p", "build"]))
with open(os.path.join(proj, ".gitignore"), "w") as f:
    f.write("build/\n")
run(["git", "add", ".pre-commit-config.yaml", ".gitignore"], proj)
run(["git", "commit", "-q", "-m", "config"], proj)
run([sys.executable, "-m", "pre_commit", "install"], proj)
head = lambda: run(["git", "rev-parse", "HEAD"], proj).stdout.strip()

# A good change: the commit goes through, the hook having run.
shutil.copy(os.path.join(inputs, "cli", "clean.cpp"), proj)
run(["git", "add", "clean.cpp"], proj)
good = run(["git", "commit", "-m", "clean"], proj)
assert "ddpguard (DDP forwards before one backward)" in good.stdout, good.stdout
assert "Passed" in good.stdout, good.stdout

# A bad change: the hook fails with the finding, and no commit is made.
before = head()
shutil.copy(os.path.join(inputs, "cli", "two-views.cpp"), os.path.join(proj, "train.cpp"))
run(["git", "add", "train.cpp"], proj)
bad = run(["git", "commit", "-m", "two views"], proj, ok=False)
assert bad.returncode != 0, bad.stdout
assert "Failed" in bad.stdout, bad.stdout
assert "train.cpp:6:13: warning: forward call on DDP-wrapped 'd'" in bad.stdout, bad.stdout
assert head() == before

# Fixed (as --fix would), the same change passes.
run([ddpguard, "-p", "build", "--fix", "--format-style=none", "train.cpp"], proj, ok=False)
assert "broadcast_buffers(false)" in open(os.path.join(proj, "train.cpp")).read()
run(["git", "add", "train.cpp"], proj)
fixed = run(["git", "commit", "-m", "two views, fixed"], proj)
assert "Passed" in fixed.stdout and head() != before, fixed.stdout

# Only a header staged: the hook has no file to check and is skipped.
with open(os.path.join(proj, "nets_extra.h"), "w") as f:
    f.write("#pragma once\nint extra();\n")
run(["git", "add", "nets_extra.h"], proj)
header = run(["git", "commit", "-m", "header"], proj)
assert "(no files to check)Skipped" in header.stdout, header.stdout

# Without -p: the hook fails and says what is missing.
with open(os.path.join(proj, "no-p.yaml"), "w") as f:
    f.write(config([]))
missing = run([sys.executable, "-m", "pre_commit", "run", "--config", "no-p.yaml",
               "--files", "clean.cpp"], proj, ok=False)
assert missing.returncode != 0, missing.stdout
assert "ddpguard hook: no compilation database" in missing.stdout, missing.stdout

# A Python project: the ddpguard-python hook needs no database; the
# [tool.ddpguard] of its pyproject.toml applies (exclude too, although
# pre-commit names every file).
py = os.path.join(tmp, "py")
os.makedirs(os.path.join(py, "generated"))
run(["git", "init", "-q", "-b", "main"], py)
with open(os.path.join(py, ".pre-commit-config.yaml"), "w") as f:
    f.write(f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: ddpguard-python\n")
with open(os.path.join(py, "pyproject.toml"), "w") as f:
    f.write('[project]\nname = "train"\n\n[tool.ddpguard]\nexclude = ["generated"]\n')
run(["git", "add", "."], py)
run(["git", "commit", "-q", "-m", "config"], py)
run([sys.executable, "-m", "pre_commit", "install"], py)
py_head = lambda: run(["git", "rev-parse", "HEAD"], py).stdout.strip()

shutil.copy(os.path.join(inputs, "python", "one_forward.py"), os.path.join(py, "clean.py"))
shutil.copy(os.path.join(inputs, "python", "two_view.py"),
            os.path.join(py, "generated", "model.py"))
run(["git", "add", "clean.py", "generated/model.py"], py)
good = run(["git", "commit", "-m", "clean and generated"], py)
assert "ddpguard (DDP forwards before one backward, Python)" in good.stdout, good.stdout
assert "Passed" in good.stdout, good.stdout

before = py_head()
shutil.copy(os.path.join(inputs, "python", "two_view.py"), os.path.join(py, "train.py"))
run(["git", "add", "train.py"], py)
bad = run(["git", "commit", "-m", "two views"], py, ok=False)
assert bad.returncode != 0 and "Failed" in bad.stdout, bad.stdout
# Python files: ruff's concise output by default.
assert ("train.py:8:12: ddp-multiple-forward-before-backward [*] forward call "
        "on DDP-wrapped 'model'") in bad.stdout, bad.stdout
assert "generated" not in bad.stdout, bad.stdout
assert py_head() == before

run([ddpguard, "--fix", "train.py"], py, ok=False)
run(["git", "add", "train.py"], py)
fixed = run(["git", "commit", "-m", "two views, fixed"], py)
assert "Passed" in fixed.stdout and py_head() != before, fixed.stdout
print("ok")
