"""sarif-fingerprints.test.py DDPGUARD SCHEMA TMP TWO_VIEWS.cpp FLAGS...

Runs ddpguard --format=sarif on variants of TWO_VIEWS.cpp and checks the
fingerprints, related locations, fixes and helpUri of the results."""
import json
import os
import subprocess
import sys

import jsonschema

ddpguard, schema_path, tmp, source = sys.argv[1:5]
flags = sys.argv[5:]
original = open(source, encoding="utf-8").read()
schema = json.load(open(schema_path, encoding="utf-8"))
validator = jsonschema.Draft4Validator(schema)


def sarif(name, text, *options):
    """The one run of a SARIF log for `text` saved as TMP/name/train.cpp."""
    os.makedirs(os.path.join(tmp, name), exist_ok=True)
    path = os.path.join(tmp, name, "train.cpp")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    # Run from TMP/name: the fingerprint holds the path relative to it.
    result = subprocess.run([ddpguard, "--format=sarif", *options, "train.cpp",
                             "--", *flags], cwd=os.path.join(tmp, name),
                            stdout=subprocess.PIPE, text=True)
    assert result.returncode == 1, (name, result.returncode)
    log = json.loads(result.stdout)
    errors = list(validator.iter_errors(log))
    assert not errors, (name, [e.message for e in errors])
    [run] = log["runs"]
    return run


def fingerprints(run):
    return [r["partialFingerprints"]["ddpguardHash/v1"] for r in run["results"]]


base_run = sarif("base", original)
[base] = fingerprints(base_run)
assert base.endswith(":1") and len(base.split(":")[0]) == 32, base

# Lines inserted above and a changed line that is no forward (the
# backward's, reformatted): same fingerprint, other line numbers.
shifted = "// a header comment\n\n#include <nets.h>\nint unrelated();\n" + original
shifted_run = sarif("shifted", shifted)
assert fingerprints(shifted_run) == [base], fingerprints(shifted_run)
line = shifted_run["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"]
assert line == 10, line
reformatted = original.replace("  (o1 + o2).sum().backward();", "  (o1 + o2).sum()  .backward();")
assert reformatted != original
assert fingerprints(sarif("backward-edited", reformatted)) == [base]
# Whitespace inside the forward lines is normalised.
spaced = original.replace("auto o2 = d(b);", "auto  o2 =   d(b);")
assert spaced != original
assert fingerprints(sarif("spaced", spaced)) == [base]

# The flagged code, the function or the file changes: another fingerprint.
changed = {
    "second-forward": original.replace("auto o2 = d(b);", "auto o2 = d(a);"),
    "first-forward": original.replace("auto o1 = d(a);", "auto o1 = d(b);"),
    "function": original.replace("void twoViews(", "void threeViews("),
}
seen = {base}
for name, text in changed.items():
    assert text != original, name
    [print_] = fingerprints(sarif(name, text))
    assert print_ not in seen, (name, print_)
    seen.add(print_)
os.makedirs(os.path.join(tmp, "other", "sub"), exist_ok=True)
with open(os.path.join(tmp, "other", "sub", "train.cpp"), "w") as f:
    f.write(original)
result = subprocess.run([ddpguard, "--format=sarif", "sub/train.cpp", "--", *flags],
                        cwd=os.path.join(tmp, "other"), stdout=subprocess.PIPE, text=True)
[other] = fingerprints(json.loads(result.stdout)["runs"][0])
assert other not in seen, other

# A member function defined out of line: its qualified name counts (another
# class, another fingerprint); its signature's layout and specifiers do not.
method = original.replace(
    "void twoViews(Net net, PG pg, torch::Tensor a, torch::Tensor b) {",
    "struct Trainer {\n  void step(Net, PG, torch::Tensor, torch::Tensor) const;\n};\n\n"
    "void Trainer::step(Net net, PG pg, torch::Tensor a, torch::Tensor b) const {")
assert method != original
[member] = fingerprints(sarif("member", method))
assert member not in seen, member
reformatted_method = method.replace(
    "void Trainer::step(Net net, PG pg, torch::Tensor a, torch::Tensor b) const {",
    "void Trainer::step(Net net, PG pg,\n    torch::Tensor a, torch::Tensor b) const noexcept(true) {"
).replace(") const;", ") const noexcept(true);")
assert fingerprints(sarif("member-reformatted", reformatted_method)) == [member]
other_class = method.replace("Trainer", "Evaluator")
[other_member] = fingerprints(sarif("member-other-class", other_class))
assert other_member not in seen | {member}, other_member

# The same forwards twice in one function: told apart by a count.
twice = original.replace("  (o1 + o2).sum().backward();\n",
                         "  (o1 + o2).sum().backward();\n"
                         "  o1 = d(a);\n  o2 = d(b);\n  (o1 + o2).sum().backward();\n"
                         "  o1 = d(a);\n  o2 = d(b);\n  (o1 + o2).sum().backward();\n")
prints = fingerprints(sarif("twice", twice))
assert len(prints) == 3, prints
# The second and third have the same forward lines: one hash, counted.
hashes = [p.split(":") for p in prints]
assert hashes[1][0] == hashes[2][0] != hashes[0][0], prints
assert [h[1] for h in hashes] == ["1", "1", "2"], prints

# Related locations for the notes, fixes with regions and inserted content.
[result] = base_run["results"]
related = result["relatedLocations"]
texts = [r["message"]["text"] for r in related]
assert any(t.startswith("earlier forward on 'd'") for t in texts), texts
assert "the backward that fails is here" in texts, texts
for r in related:
    region = r["physicalLocation"]["region"]
    assert region["startLine"] >= 1 and region["startColumn"] >= 1, r
fixes = result["fixes"]
assert len(fixes) >= 2, fixes
for fix in fixes:
    for change in fix["artifactChanges"]:
        assert change["artifactLocation"]["uri"].startswith("file:///"), change
        for edit in change["replacements"]:
            region = edit["deletedRegion"]
            for key in ("startLine", "startColumn", "endLine", "endColumn",
                        "charOffset", "charLength"):
                assert isinstance(region[key], int), (key, region)
            assert "text" in edit["insertedContent"], edit
# The broadcast fix inserts at line 4; the fuse fix replaces the statement
# of line 6 (columns 3 to 18, the end exclusive).
broadcast = fixes[0]["artifactChanges"][0]["replacements"][0]
assert broadcast["deletedRegion"]["startLine"] == 4 == broadcast["deletedRegion"]["endLine"]
assert broadcast["deletedRegion"]["startColumn"] == broadcast["deletedRegion"]["endColumn"]
fuse = [e for f in fixes for c in f["artifactChanges"] for e in c["replacements"]
        if "forward_group" in e["insertedContent"]["text"]]
assert fuse, fixes
region = fuse[0]["deletedRegion"]
assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"],
        region["charLength"]) == (6, 3, 6, 18, 15), region

# helpUri: absent by default, the base followed by the rule id with the
# option.
rules = base_run["tool"]["driver"]["rules"]
assert all("helpUri" not in rule for rule in rules), rules
helped = sarif("help", original, "--sarif-help-uri-base=https://example.org/ddpguard/rules/")
assert [rule["helpUri"] for rule in helped["tool"]["driver"]["rules"]] == [
    "https://example.org/ddpguard/rules/ddp-multiple-forward-before-backward",
    "https://example.org/ddpguard/rules/optimizer-step-before-backward",
    "https://example.org/ddpguard/rules/parameter-write-before-backward",
    "https://example.org/ddpguard/rules/inplace-write-before-backward",
    "https://example.org/ddpguard/rules/silent-write-before-backward"], helped
print("ok")
