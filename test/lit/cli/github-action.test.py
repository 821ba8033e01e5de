"""github-action.test.py DDPGUARD REPO_ROOT INPUTS CLI_INPUTS SCHEMA TMP"""
import json
import os
import re
import shutil
import subprocess
import sys

import jsonschema
import yaml

ddpguard, root, inputs, cli_inputs, schema_path, tmp = sys.argv[1:7]
root = os.path.realpath(root)
action = yaml.safe_load(open(os.path.join(root, "action.yml"), encoding="utf-8"))
assert action["runs"]["using"] == "composite", action["runs"]
validator = jsonschema.Draft4Validator(json.load(open(schema_path, encoding="utf-8")))

env = dict(os.environ)
env.update({
    "PATH": os.path.dirname(os.path.realpath(ddpguard)) + os.pathsep + env["PATH"],
    "HOME": tmp, "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
})


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def put(repo, name, source):
    shutil.copy(source, os.path.join(repo, name))


# upstream: main with the old finding; the branch 'feature' adds a new one
# (and changes a source the database does not hold); main then edits the old
# function, which the pull request must not be blamed for.
upstream = os.path.join(tmp, "upstream")
os.makedirs(upstream)
git("init", "-q", "-b", "main", cwd=upstream)
put(upstream, "train.cpp", os.path.join(cli_inputs, "diff-base.cpp"))
put(upstream, "clean.cpp", os.path.join(inputs, "cli", "clean.cpp"))
put(upstream, "tool.cpp", os.path.join(inputs, "cli", "clean.cpp"))
git("add", ".", cwd=upstream)
git("commit", "-q", "-m", "base", cwd=upstream)
fork_point = git("rev-parse", "HEAD", cwd=upstream)
git("checkout", "-q", "-b", "feature", cwd=upstream)
put(upstream, "train.cpp", os.path.join(cli_inputs, "diff-new.cpp"))
put(upstream, "tool.cpp", os.path.join(inputs, "cli", "two-views.cpp"))
git("commit", "-q", "-a", "-m", "feature", cwd=upstream)
git("checkout", "-q", "main", cwd=upstream)
with open(os.path.join(upstream, "train.cpp"), "a") as f:
    f.write("// main moved on\n")
text = open(os.path.join(upstream, "train.cpp")).read()
with open(os.path.join(upstream, "train.cpp"), "w") as f:
    f.write(text.replace("(o1 + o2).sum().backward();", "(o1 + o2).mean().backward();"))
git("commit", "-q", "-a", "-m", "main moved on", cwd=upstream)

# The runner's checkout of the pull request (fetch-depth: 0), with a build
# directory whose database holds train.cpp and clean.cpp, not tool.cpp.
workspace = os.path.join(tmp, "workspace")
git("clone", "-q", "-b", "feature", upstream, workspace, cwd=tmp)
os.makedirs(os.path.join(workspace, "build"))
mock = os.path.join(inputs, "mock")
with open(os.path.join(workspace, "build", "compile_commands.json"), "w") as f:
    json.dump([{"directory": workspace, "file": name,
                "arguments": ["clang++", "-std=c++17", "-isystem", mock, "-c", name]}
               for name in ("train.cpp", "clean.cpp")], f)

EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def run_action(name, inputs_given, github_env):
    """Runs the action's steps as GitHub runs a composite action's; returns
    (exit status, log, outputs)."""
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    for key in inputs_given:
        assert key in values, key
    values.update(inputs_given)
    for key, spec in action["inputs"].items():
        assert not spec.get("required") or values[key], key
    out_dir = os.path.join(tmp, name)
    os.makedirs(out_dir)
    output, summary = os.path.join(out_dir, "output"), os.path.join(out_dir, "summary")
    context = {"github.action_path": root, "github.workspace": workspace,
               "github.event.before": github_env.pop("EVENT_BEFORE", "")}

    def expand(text):
        def one(match):
            expr = match.group(1)
            if expr.startswith("inputs."):
                return values[expr[len("inputs."):]]
            assert expr in context, f"unknown expression {expr}"
            return context[expr]
        return EXPRESSION.sub(one, str(text))

    step_env = dict(env)
    step_env.update({"GITHUB_WORKSPACE": workspace, "GITHUB_OUTPUT": output,
                     "GITHUB_STEP_SUMMARY": summary, "GITHUB_ACTION_PATH": root,
                     "GITHUB_ACTIONS": "true", "RUNNER_TEMP": out_dir})
    step_env.update(github_env)
    log = ""
    for step in action["runs"]["steps"]:
        assert "run" in step and step["shell"] == "bash", step
        for key, value in step.get("env", {}).items():
            step_env[key] = expand(value)
        script = os.path.join(out_dir, "step.sh")
        with open(script, "w") as f:
            f.write(expand(step["run"]))
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script],
                                cwd=workspace, env=step_env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        log += result.stdout
        if result.returncode != 0:
            break
    outputs = {}
    if os.path.exists(output):
        for line in open(output):
            key, _, value = line.rstrip("\n").partition("=")
            outputs[key] = value
    return result.returncode, log, outputs


def check_sarif(path):
    log = json.load(open(path, encoding="utf-8"))
    errors = list(validator.iter_errors(log))
    assert not errors, [e.message for e in errors]
    return log["runs"][0]


merge_base = git("merge-base", "origin/main", "HEAD", cwd=workspace)
assert merge_base == fork_point

# A pull request into main.
pr = {"GITHUB_BASE_REF": "main", "GITHUB_EVENT_NAME": "pull_request"}
status, log, outputs = run_action("pr", {"build-dir": "build"}, dict(pr))
assert status == 0, log
assert outputs == {"sarif-file": os.path.join(workspace, "ddpguard.sarif"),
                   "rdjsonl-file": os.path.join(workspace, "ddpguard.rdjsonl"),
                   "findings": "1", "base": merge_base}, (outputs, log)
assert "1 source(s) to check" in log, log
assert "::warning file=train.cpp,line=13,col=13,title=ddp-multiple-forward-before-backward::" in log, log
run = check_sarif(outputs["sarif-file"])
[result] = run["results"]
location = result["locations"][0]["physicalLocation"]
assert location["artifactLocation"]["uri"] == "file://" + os.path.join(workspace, "train.cpp")
assert location["region"]["startLine"] == 13, location
assert result["partialFingerprints"]["ddpguardHash/v1"].endswith(":1"), result
assert result["fixes"] and result["relatedLocations"], result
rd = [json.loads(l) for l in open(outputs["rdjsonl-file"], encoding="utf-8")]
assert len(rd) == 1, rd
assert rd[0]["location"]["path"] == "train.cpp", rd
assert rd[0]["location"]["range"]["start"] == {"line": 13, "column": 13}, rd
assert rd[0]["code"]["value"] == "ddp-multiple-forward-before-backward", rd
assert rd[0]["suggestions"][0]["text"] == ", ddpguard::DDPOptions().broadcast_buffers(false)", rd
assert "1 finding(s)" in open(os.path.join(tmp, "pr", "summary")).read()

# fail-on-findings: the step fails, the files are written; other paths.
status, log, outputs = run_action(
    "fail", {"build-dir": os.path.join(workspace, "build"), "fail-on-findings": "true",
             "sarif-file": "out/x.sarif", "rdjsonl-file": "out/x.rdjsonl"}, dict(pr))
assert status == 1, (status, log)
assert outputs["findings"] == "1", outputs
assert outputs["sarif-file"] == os.path.join(workspace, "out", "x.sarif"), outputs
assert len(check_sarif(outputs["sarif-file"])["results"]) == 1

# sources: all, with a push's previous commit as the base: the same finding,
# clean.cpp checked too.
status, log, outputs = run_action(
    "push", {"build-dir": "build", "sources": "all"},
    {"GITHUB_EVENT_NAME": "push", "EVENT_BEFORE": fork_point})
assert status == 0 and outputs["findings"] == "1", (status, log)
assert "2 source(s) to check" in log, log

# Nothing changed since the base: an empty but valid log, no rdjsonl lines.
status, log, outputs = run_action("none", {"build-dir": "build", "base-ref": "HEAD"}, {})
assert status == 0 and outputs["findings"] == "0", (status, log)
run = check_sarif(outputs["sarif-file"])
assert run["results"] == [] and run["tool"]["driver"]["name"] == "ddpguard", run
assert open(outputs["rdjsonl-file"]).read() == ""

# Errors: no database, no base.
status, log, outputs = run_action("nodb", {"build-dir": "nowhere"}, dict(pr))
assert status == 2 and "::error title=ddpguard::" in log and "compile_commands.json" in log, log
status, log, outputs = run_action("nobase", {"build-dir": "build"}, {})
assert status == 2 and "no base to compare with" in log, log

# A Python project, no build-dir: the changed Python files are checked (the
# finding of an unchanged one is not reported, what [tool.ddpguard] excludes
# is not checked), a changed C++ source is named as unchecked.
py_upstream = os.path.join(tmp, "py-upstream")
os.makedirs(os.path.join(py_upstream, "generated"))
git("init", "-q", "-b", "main", cwd=py_upstream)
put(py_upstream, "train.py", os.path.join(inputs, "python", "one_forward.py"))
put(py_upstream, "old.py", os.path.join(inputs, "python", "two_view.py"))
put(py_upstream, "tool.cpp", os.path.join(inputs, "cli", "clean.cpp"))
with open(os.path.join(py_upstream, "pyproject.toml"), "w") as f:
    f.write('[tool.ddpguard]\nexclude = ["generated"]\n')
git("add", ".", cwd=py_upstream)
git("commit", "-q", "-m", "base", cwd=py_upstream)
git("checkout", "-q", "-b", "feature", cwd=py_upstream)
put(py_upstream, "train.py", os.path.join(inputs, "python", "two_view.py"))
put(py_upstream, os.path.join("generated", "gen.py"), os.path.join(inputs, "python", "two_view.py"))
put(py_upstream, "tool.cpp", os.path.join(inputs, "cli", "two-views.cpp"))
git("add", ".", cwd=py_upstream)
git("commit", "-q", "-m", "feature", cwd=py_upstream)
workspace = os.path.join(tmp, "py-workspace")
git("clone", "-q", "-b", "feature", py_upstream, workspace, cwd=tmp)
status, log, outputs = run_action("python", {}, dict(pr))
assert status == 0 and outputs["findings"] == "1", (status, log)
assert "2 source(s) to check" in log, log
assert "::warning file=train.py,line=8,col=12,title=ddp-multiple-forward-before-backward::" in log, log
assert "::notice title=ddpguard::1 changed C++ source(s) not checked" in log, log
[result] = check_sarif(outputs["sarif-file"])["results"]
assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
    "file://" + os.path.join(workspace, "train.py"), result
[rd] = [json.loads(l) for l in open(outputs["rdjsonl-file"], encoding="utf-8")]
assert rd["location"]["path"] == "train.py" and rd["suggestions"], rd
print("ok")
