#!/usr/bin/env python3
"""Counts the buffers of timm models: the table the Python checker's
timm.create_model entries come from (lib/PythonFrontend/PythonFrontend.cpp,
timmBuffers; docs/python-checker.md). Needs timm (and torchvision) importable:

    python3 -m pip install --target /tmp/timmlib timm torchvision==0.26.0 pillow numpy
    PYTHONPATH=/tmp/timmlib .venv/bin/python scripts/timm-buffers.py resnet18 vit_base_patch16_224 ...

Prints one line per model: its name, how many buffers it has and their
kinds (the last part of each buffer's name).
"""
import sys

import timm


def main() -> None:
    for name in sys.argv[1:]:
        model = timm.create_model(name, pretrained=False)
        buffers = [key for key, _ in model.named_buffers()]
        kinds = sorted({key.split(".")[-1] for key in buffers})
        print(f"{name}\t{len(buffers)}\t{','.join(kinds)}", flush=True)


if __name__ == "__main__":
    main()
