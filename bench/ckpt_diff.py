#!/usr/bin/env python3
"""How far apart two hetsage checkpoints' parameters are: the count and
share of parameters that differ, the largest absolute difference, and the
largest difference relative to the parameters' scale (max |a|). Used to
say how much training differs between devices and OpenCL implementations
(README, "Results across devices").

usage: ckpt_diff.py A.ckpt B.ckpt   (prints one JSON line)

Reads the layouts of runtime/nn/checkpoint.h: version 1 (n_params, u64,
at byte 120; parameters from byte 128) and version 2 (n_params at byte 136;
parameters from the header size at byte 12)."""
import json
import struct
import sys

import numpy as np


def params(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'HSCKPT1\n':
        sys.exit(f'{path}: not a hetsage checkpoint')
    version = struct.unpack_from('<I', data, 8)[0]
    if version == 1:
        n, start = struct.unpack_from('<Q', data, 120)[0], 128
    elif version == 2:
        n, start = struct.unpack_from('<Q', data, 136)[0], struct.unpack_from('<I', data, 12)[0]
    else:
        sys.exit(f'{path}: checkpoint version {version}, not 1 or 2')
    return np.frombuffer(data, dtype='<f4', count=n, offset=start)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = params(sys.argv[1]), params(sys.argv[2])
    if a.shape != b.shape:
        sys.exit(f'{a.shape[0]} parameters against {b.shape[0]}: different models')
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    scale = float(np.max(np.abs(a))) or 1.0
    print(json.dumps({'params': int(a.shape[0]), 'differ': int(np.count_nonzero(d)),
                      'differ_share': float(np.count_nonzero(d)) / a.shape[0],
                      'max_abs': float(d.max()), 'max_rel_to_scale': float(d.max()) / scale}))


if __name__ == '__main__':
    main()
