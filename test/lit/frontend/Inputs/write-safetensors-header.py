#!/usr/bin/python3
"""write-safetensors-header.py FILE NAME...: a valid safetensors file whose
tensors are NAME... (each F32 [1], value 0): what a test needs when only the
tensor names matter (tfm-compile DIR reads them to find a checkpoint's
prefix)."""
import json
import struct
import sys

path, names = sys.argv[1], sys.argv[2:]
header = {n: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
          for i, n in enumerate(names)}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"\0" * (4 * len(names)))
