#!/usr/bin/env python3
"""Runs one checker test the way clang-tidy's check_clang_tidy.py does, twice:
through the clang-tidy-19 plugin and through the ddpguard CLI.

  check_ddpguard.py [--fix-mode=M] [--rules=F] [--option=K=V] [--check-suffix=S]
                    <input.cpp> <temp> -- <compile flags>

--option sets a check option: for clang-tidy in -config, for the CLI in a
.clang-tidy next to the checked file.

For each front end: the CHECK-MESSAGES[-S] lines must match the diagnostics
(and nothing else may warn), the fixed file must match CHECK-FIXES[-S], and
the fixed file is parsed again: it must compile and report nothing.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# The check the options are for.
CHECK = "ddp-multiple-forward-before-backward"


def run(cmd, **kwargs):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kwargs)


def filecheck(args, prefix, input_file, text, extra=()):
    result = run([args.filecheck, input_file, "-check-prefix=" + prefix,
                  "-strict-whitespace", *extra], input=text)
    if result.returncode != 0:
        sys.exit(f"FileCheck {prefix} failed:\n{result.stderr}\n--- input ---\n{text}")


def fail(message, result=None):
    if result is not None:
        message += f"\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    sys.exit(message)


def check_names(ddpguard):
    """Every check the CLI runs, from the table (lib/Tidy/CheckNames.h):
    clang-tidy runs the same ones."""
    listed = run([ddpguard, "--list-checks", "--output-format=json"])
    if listed.returncode != 0:
        fail("ddpguard --list-checks failed", listed)
    return [check["name"] for check in json.loads(listed.stdout)]


def tidy_command(args, path, flags, fix):
    options = {"FixMode": args.fix_mode, **dict(args.option)}
    if args.rules:
        options["RuleFiles"] = ";".join(os.path.abspath(r) for r in args.rules)
    config = "{CheckOptions: {" + ", ".join(
        f"'{CHECK}.{k}': '{v}'" for k, v in options.items()) + "}}"
    cmd = [args.clang_tidy, "--load=" + args.plugin,
           "-checks=-*," + ",".join(check_names(args.ddpguard)),
           "-config=" + config, "--quiet"]
    if fix:
        cmd.append("--fix")
    return cmd + [path, "--"] + flags


def cli_command(args, path, flags, fix):
    cmd = [args.ddpguard, "--fix-mode=" + args.fix_mode]
    cmd += ["--rules=" + r for r in args.rules]
    if fix:
        cmd.append("--fix")
    return cmd + [path, "--"] + flags


def check_front_end(name, command, args, input_file, cleaned, temp, flags,
                    prefixes):
    messages, fixes = prefixes
    path = f"{temp}.{name}.cpp"
    if args.option:
        # Its own folder, so that the .clang-tidy reaches no other test.
        os.makedirs(temp + ".d", exist_ok=True)
        path = os.path.join(temp + ".d", f"{name}.cpp")
        with open(os.path.join(temp + ".d", ".clang-tidy"), "w") as f:
            f.write("CheckOptions:\n" + "".join(
                f"  {CHECK}.{k}: '{v}'\n" for k, v in args.option))
    with open(path, "w") as f:
        f.write(cleaned)
    # clang-tidy exits non-zero on compiler errors; the CLI exits 2.
    result = run(command(args, path, flags, True))
    if result.returncode not in ((0,) if name == "tidy" else (0, 1)):
        fail(f"[{name}] the input does not compile", result)
    if messages:
        filecheck(args, messages, input_file, result.stdout,
                  ["-implicit-check-not={{warning|error}}:"])
    elif "warning:" in result.stdout:
        fail(f"[{name}] unexpected warning", result)
    with open(path) as f:
        fixed = f.read()
    if fixes:
        filecheck(args, fixes, input_file, fixed)
    elif fixed != cleaned and not args.allow_fixes:
        fail(f"[{name}] the file changed but the test has no CHECK-FIXES")
    # The fixed file must compile and be clean; a second fix changes nothing.
    again = run(command(args, path, flags, True))
    if args.unfixed:
        if again.returncode not in ((0,) if name == "tidy" else (1,)):
            fail(f"[{name}] the unfixed file should still parse and report", again)
    elif again.returncode != 0 or "warning:" in again.stdout:
        fail(f"[{name}] the fixed file still reports or does not parse", again)
    with open(path) as f:
        if f.read() != fixed:
            fail(f"[{name}] a second --fix changed the file again")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clang-tidy", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--ddpguard", required=True)
    parser.add_argument("--filecheck", required=True)
    parser.add_argument("--fix-mode", default="broadcast")
    parser.add_argument("--rules", action="append", default=[])
    parser.add_argument("--option", action="append", default=[],
                        type=lambda kv: tuple(kv.split("=", 1)),
                        help="a check option, KEY=VALUE")
    parser.add_argument("--check-suffix", default="")
    parser.add_argument("--allow-fixes", action="store_true",
                        help="fixes may be made without CHECK-FIXES lines")
    parser.add_argument("--unfixed", action="store_true",
                        help="no fix applies: findings remain after --fix")
    parser.add_argument("input")
    parser.add_argument("temp")
    parser.add_argument("flags", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    flags = args.flags[1:] if args.flags[:1] == ["--"] else args.flags

    with open(args.input) as f:
        text = f.read()
    suffix = "-" + args.check_suffix if args.check_suffix else ""
    messages = "CHECK-MESSAGES" + suffix
    fixes = "CHECK-FIXES" + suffix
    prefixes = (messages if re.search(messages + ":", text) else None,
                fixes if re.search(fixes + ":", text) else None)
    # Keep line numbers, drop the CHECK lines themselves from the code.
    cleaned = re.sub(r"//\s*CHECK-[A-Z0-9\-]*:[^\r\n]*", "//", text)
    os.makedirs(os.path.dirname(os.path.abspath(args.temp)), exist_ok=True)
    check_front_end("tidy", tidy_command, args, args.input, cleaned, args.temp,
                    flags, prefixes)
    check_front_end("cli", cli_command, args, args.input, cleaned, args.temp,
                    flags, prefixes)


if __name__ == "__main__":
    main()
