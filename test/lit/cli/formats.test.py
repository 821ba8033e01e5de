"""Checks the structure and content of ddpguard's JSON and SARIF output."""
import json
import sys

kind, path = sys.argv[1], sys.argv[2]
doc = json.load(open(path))

if kind == "json":
    [finding] = doc["findings"]
    assert finding["check"] == "ddp-multiple-forward-before-backward"
    assert (finding["line"], finding["column"]) == (6, 13), finding
    assert finding["file"].endswith("two-views.cpp")
    notes = [(n["line"], n["message"]) for n in finding["notes"]]
    assert notes[0] == (5, "earlier forward on 'd' is here; its saved buffers are overwritten"), notes
    assert notes[1] == (7, "the backward that fails is here"), notes
    [fix] = finding["fix"]
    assert fix["replacement"] == ", ddpguard::DDPOptions().broadcast_buffers(false)", fix
    assert doc["errors"] == []
elif kind == "sarif":
    assert doc["version"] == "2.1.0"
    [run] = doc["runs"]
    # One rule per check (lib/Tidy/CheckNames.h).
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [
        "ddp-multiple-forward-before-backward",
        "optimizer-step-before-backward", "parameter-write-before-backward",
        "inplace-write-before-backward", "silent-write-before-backward"], rules
    rule = rules[0]
    [result] = run["results"]
    assert result["ruleId"] == rule["id"] and result["level"] == "warning"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (6, 13), region
    related = result["relatedLocations"]
    assert [r["id"] for r in related] == list(range(1, len(related) + 1))
    assert related[1]["message"]["text"] == "the backward that fails is here"
    assert related[1]["physicalLocation"]["region"]["startLine"] == 7
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///") and uri.endswith("two-views.cpp"), uri
    fixes = result["fixes"]
    edit = fixes[0]["artifactChanges"][0]["replacements"][0]
    assert edit["insertedContent"]["text"] == ", ddpguard::DDPOptions().broadcast_buffers(false)"
    assert edit["deletedRegion"]["startLine"] == 4 and edit["deletedRegion"]["charLength"] == 0
    fuse = [f for f in fixes if "fuse" in f["description"]["text"]]
    assert fuse and "forward_group(a, b)" in json.dumps(fuse), fixes
    assert run["invocations"][0]["executionSuccessful"] is True
elif kind == "sarif-error":
    [run] = doc["runs"]
    assert run["results"] == []
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert "does not parse" in note["message"]["text"], note
else:
    sys.exit("unknown kind " + kind)
