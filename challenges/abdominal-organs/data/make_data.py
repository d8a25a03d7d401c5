"""Write this challenge's hidden data: DATA_ROOT/abdominal-organs/<phase>/{inputs,ground-truth}.

Synthetic abdominal CT, shipped as real challenges ship it: NIfTI (.nii.gz, written with
nibabel), one image and one label map per case, both named case-NNN.nii.gz. A volume is
32 x 32 x 24 voxels (x, y, z; numpy readers that follow SimpleITK see [z, y, x] = 24 x 32 x 32) of
3 x 3 x 5 mm, intensities in Hounsfield-like units: fat around soft tissue, and four organs with
FLARE21's labels, 1 liver, 2 kidneys (both), 3 spleen, 4 pancreas, each a jittered ellipsoid at
its anatomical place with its own enhancement, under noise. One test case has had its spleen
removed (an empty label, which FLARE scores 1 when the prediction is empty too).

`--public` writes the validation images alone, which participants download to make their
predictions (the validation phase takes predictions); the runner's copy also has the labels and
the test phase. `--sample DIR` writes the public sample cases `challenge try` runs on instead,
DIR/{inputs,ground-truth}, from a seed of their own (one without a spleen, as in the test phase).
Deterministic for a seed. Usage: python make_data.py DATA_ROOT [--seed S] [--public] | --sample DIR
"""

import argparse
from pathlib import Path

import nibabel as nib
import numpy as np

CHALLENGE = "abdominal-organs"
SHAPE = (32, 32, 24)  # x (patient's right to left), y (front to back), z (feet to head)
SPACING = (3.0, 3.0, 5.0)  # mm
CASES = {"validation": 3, "test": 4}
NO_SPLEEN = ("test", 1)  # (phase, case index): a splenectomy
SAMPLE = (3, 7, 2)  # the public sample: cases, seed, the case index without a spleen
# label: (name, centre in voxels, radii in voxels, mean intensity)
ORGANS = {
    1: ("liver", (10, 14, 14), (7, 8, 6), 100),
    2: ("kidney", (8, 22, 10), (3.5, 3.5, 4), 220),
    3: ("spleen", (24, 19, 14), (4, 4.5, 4), 150),
    4: ("pancreas", (17, 15, 11), (6, 2.5, 2.5), 50),
}
LEFT_KIDNEY = (24, 22, 10)  # the second kidney, mirrored
NOISE = 20.0


def ellipsoid(rng: np.random.Generator, centre, radii) -> np.ndarray:
    grid = np.indices(SHAPE, dtype=np.float32)
    centre = np.asarray(centre) + rng.uniform(-1.5, 1.5, 3)
    radii = np.asarray(radii) * rng.uniform(0.85, 1.15, 3)
    return sum(((grid[i] - centre[i]) / radii[i]) ** 2 for i in range(3)) <= 1.0


def case(rng: np.random.Generator, *, spleen: bool) -> tuple[np.ndarray, np.ndarray]:
    labels = np.zeros(SHAPE, dtype=np.uint8)
    body = ellipsoid(rng, (16, 16, 12), (15, 14, 30))
    image = np.where(body, 0.0, -1000.0)
    for label, (_, centre, radii, hu) in ORGANS.items():
        if label == 3 and not spleen:
            continue
        mask = ellipsoid(rng, centre, radii)
        if label == 2:
            mask |= ellipsoid(rng, LEFT_KIDNEY, radii)
        labels[mask & (labels == 0)] = label
        image[mask] = hu + rng.normal(0, 5)
    image = image + rng.normal(0, NOISE, SHAPE)
    return image.astype(np.int16), labels


def save(array: np.ndarray, path: Path) -> None:
    affine = np.diag([*SPACING, 1.0])
    nib.save(nib.Nifti1Image(array, affine), path)


def write_case(folder: Path, index: int, image: np.ndarray, labels: np.ndarray, *, truth: bool) -> None:
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    save(image, folder / "inputs" / f"case-{index + 1:03d}.nii.gz")
    if truth:
        (folder / "ground-truth").mkdir(parents=True, exist_ok=True)
        save(labels, folder / "ground-truth" / f"case-{index + 1:03d}.nii.gz")


def write_sample(folder: Path) -> None:
    cases, seed, no_spleen = SAMPLE
    rng = np.random.default_rng(seed)
    for index in range(cases):
        write_case(folder, index, *case(rng, spleen=index != no_spleen), truth=True)
    print(f"wrote {cases} sample cases under {folder}")


def write_hidden(data_root: Path, *, seed: int, public: bool) -> None:
    """Each phase's cases under data_root; with `public`, the validation images alone."""
    rng = np.random.default_rng(seed)
    for phase, count in CASES.items():
        folder = data_root / CHALLENGE / phase
        for index in range(count):
            image, labels = case(rng, spleen=(phase, index) != NO_SPLEEN)  # drawn in every mode: same cases
            if not public or phase == "validation":
                write_case(folder, index, image, labels, truth=not public)
        if folder.is_dir():
            print(f"wrote {count} cases under {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_root", type=Path, nargs="?")
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--public", action="store_true", help="the validation images only, as participants get them")
    parser.add_argument("--sample", type=Path, metavar="DIR", help="write the public sample cases here instead")
    args = parser.parse_args()
    if args.sample:
        write_sample(args.sample)
    elif args.data_root is None:
        parser.error("give DATA_ROOT or --sample DIR")
    else:
        write_hidden(args.data_root, seed=args.seed, public=args.public)


if __name__ == "__main__":
    main()
