"""Dice of each algorithm job's mask against the ground truth, matched through the input image's name."""

import json
from pathlib import Path
from statistics import mean

import numpy as np

INPUT_DIRECTORY, OUTPUT_DIRECTORY = Path("/input"), Path("/output")
GROUND_TRUTH_DIRECTORY = Path("/opt/ml/input/data/ground_truth")
TYPES = {"MET_UCHAR": np.uint8, "MET_FLOAT": np.float32}


def read_mha(path):
    raw = path.read_bytes()
    header, _, data = raw.partition(b"ElementDataFile = LOCAL\n")
    fields = dict(line.split(" = ", 1) for line in header.decode().splitlines())
    shape = tuple(reversed([int(n) for n in fields["DimSize"].split()]))
    return np.frombuffer(data, dtype=TYPES[fields["ElementType"]]).reshape(shape)


def get_value(values, slug):
    for value in values:
        if value["socket"]["slug"] == slug:
            return value
    raise RuntimeError(f"Value with interface {slug} not found!")


def get_file_location(job_pk, values, slug):
    relative_path = get_value(values, slug)["socket"]["relative_path"]
    return INPUT_DIRECTORY / job_pk / "output" / relative_path


def process(job):
    [mask_file] = get_file_location(job["pk"], job["outputs"], "ellipsoid-mask").glob("*.mha")
    prediction = read_mha(mask_file).astype(bool)
    count = json.loads(get_file_location(job["pk"], job["outputs"], "voxel-count").read_text())
    if count != get_value(job["outputs"], "voxel-count")["value"] or count != int(prediction.sum()):
        raise ValueError(f"job {job['pk']}: voxel-count disagrees with the mask")
    name = get_value(job["inputs"], "ellipsoid-image")["image"]["name"]
    truth = read_mha(GROUND_TRUTH_DIRECTORY / name).astype(bool)
    dice = 2 * float((prediction & truth).sum()) / float(prediction.sum() + truth.sum())
    return {"case": name, "dice": dice, "seconds": job["exec_duration"]}


def main():
    predictions = json.loads((INPUT_DIRECTORY / "predictions.json").read_text())
    results = [process(job) for job in predictions]
    metrics = {"results": results, "aggregates": {"dice": mean(r["dice"] for r in results)}}
    (OUTPUT_DIRECTORY / "metrics.json").write_text(json.dumps(metrics, indent=4))


if __name__ == "__main__":
    raise SystemExit(main())
