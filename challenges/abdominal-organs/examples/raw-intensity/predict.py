"""Label each voxel by the nearest organ intensity, voxel by voxel: no filter, no clean-up. Quick,
but the noise scatters wrong labels through every organ and around it.

Reads every *.nii.gz under -i and writes its label map (FLARE21's labels: 1 liver, 2 kidney,
3 spleen, 4 pancreas), same name and geometry, under -o.
"""

import argparse
from pathlib import Path

import nibabel as nib
import numpy as np

MEANS = {0: 0.0, 4: 50.0, 1: 100.0, 3: 150.0, 2: 220.0}  # label -> typical intensity; 0: everything else


def segment(image: np.ndarray) -> np.ndarray:
    labels = np.array(list(MEANS), dtype=np.uint8)
    centres = np.array(list(MEANS.values()), dtype=np.float32)
    volume = image.astype(np.float32)
    nearest = labels[np.abs(volume[..., None] - centres).argmin(axis=-1)]
    nearest[volume < -300] = 0  # air
    return nearest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-i", "--input", type=Path, required=True)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    for path in sorted(args.input.glob("*.nii.gz")):
        image = nib.load(path)
        nib.save(nib.Nifti1Image(segment(np.asanyarray(image.dataobj)), image.affine), args.output / path.name)


if __name__ == "__main__":
    main()
