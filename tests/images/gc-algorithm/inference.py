"""Segment the input image by thresholding it at the input value; grand-challenge's algorithm layout."""

import json
from pathlib import Path

import numpy as np

INPUT_PATH, OUTPUT_PATH = Path("/input"), Path("/output")
TYPES = {"MET_UCHAR": np.uint8, "MET_FLOAT": np.float32}


def read_mha(path):
    raw = path.read_bytes()
    header, _, data = raw.partition(b"ElementDataFile = LOCAL\n")
    fields = dict(line.split(" = ", 1) for line in header.decode().splitlines())
    shape = tuple(reversed([int(n) for n in fields["DimSize"].split()]))
    return np.frombuffer(data, dtype=TYPES[fields["ElementType"]]).reshape(shape)


def write_mha(path, array):
    kind = next(name for name, dtype in TYPES.items() if dtype == array.dtype)
    header = (f"ObjectType = Image\nNDims = {array.ndim}\nDimSize = {' '.join(map(str, reversed(array.shape)))}\n"
              f"ElementType = {kind}\nElementDataFile = LOCAL\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.encode() + array.tobytes())


def interface_key():
    inputs = json.loads((INPUT_PATH / "inputs.json").read_text())
    return tuple(sorted(value["socket"]["slug"] for value in inputs))


def run():
    if interface_key() != ("ellipsoid-image", "threshold"):
        raise RuntimeError(f"unexpected interface {interface_key()}")
    [image_file] = (INPUT_PATH / "images" / "ellipsoid-image").glob("*.mha")
    threshold = json.loads((INPUT_PATH / "threshold.json").read_text())
    mask = (read_mha(image_file) > threshold).astype(np.uint8)
    write_mha(OUTPUT_PATH / "images" / "ellipsoid-mask" / "output.mha", mask)
    (OUTPUT_PATH / "voxel-count.json").write_text(json.dumps(int(mask.sum())))


if __name__ == "__main__":
    run()
