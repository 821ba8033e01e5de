"""Parses each line of an rdjsonl file as JSON and checks its fields."""
import json
import sys

kind, path = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
assert text == "" or text.endswith("\n"), repr(text[-20:])
lines = [json.loads(line) for line in text.splitlines()]


def position(p):
    assert set(p) == {"line", "column"}, p
    assert isinstance(p["line"], int) and p["line"] >= 1, p
    assert isinstance(p["column"], int) and p["column"] >= 1, p
    return p["line"], p["column"]


def check_common(d):
    assert d["severity"] == "WARNING", d
    assert d["source"] == {"name": "ddpguard"}, d
    assert isinstance(d["message"], str) and d["message"], d
    r = d["location"]["range"]
    assert position(r["start"]) <= position(r["end"]), r


if kind == "findings":
    [d] = lines
    check_common(d)
    assert d["code"] == {"value": "ddp-multiple-forward-before-backward"}, d
    assert d["message"].startswith("forward call on DDP-wrapped 'd'"), d
    assert d["location"]["path"] == "src/train.cpp", d
    r = d["location"]["range"]
    # The call's callee 'd' at line 6, column 13; the end is exclusive.
    assert (position(r["start"]), position(r["end"])) == ((6, 13), (6, 14)), r
    [s] = d["suggestions"]
    assert s["text"] == ", ddpguard::DDPOptions().broadcast_buffers(false)", s
    # An insertion: an empty range after 'pg' in "  DDP d(net, pg);".
    assert position(s["range"]["start"]) == position(s["range"]["end"]) == (4, 16), s
    related = {x["message"]: x["location"] for x in d["related_locations"]}
    backward = related["the backward that fails is here"]
    assert backward["path"] == "src/train.cpp", backward
    assert position(backward["range"]["start"]) == (7, 19), backward
    # 'backward' is 8 characters long.
    assert position(backward["range"]["end"]) == (7, 27), backward
    earlier = [l for m, l in related.items() if m.startswith("earlier forward on 'd'")]
    assert earlier and position(earlier[0]["range"]["start"]) == (5, 13), related
elif kind == "warnings":
    codes = sorted(d["code"]["value"] for d in lines)
    assert codes == ["-Wreturn-type", "-Wunused-variable",
                     "ddp-multiple-forward-before-backward"], codes
    for d in lines:
        check_common(d)
        assert d["location"]["path"] == "src/warnings.cpp", d
        if d["code"]["value"].startswith("-W"):
            assert "suggestions" not in d, d
    unused = [d for d in lines if d["code"]["value"] == "-Wunused-variable"][0]
    assert position(unused["location"]["range"]["start"]) == (4, 7), unused
    assert position(unused["location"]["range"]["end"]) == (4, 13), unused
elif kind == "clean":
    assert lines == [], lines
else:
    sys.exit("unknown kind " + kind)
print("ok:", len(lines), "diagnostics")
