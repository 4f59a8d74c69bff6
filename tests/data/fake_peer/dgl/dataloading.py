"""Test stand-in for dgl.dataloading.NeighborSampler. FAKE_PEER_FAIL makes
sampling raise, to check that hetsage bench shows a failing peer's error."""
import os

import numpy as np


class _Block:
    def __init__(self, n):
        self.n = n

    def num_edges(self):
        return self.n


class NeighborSampler:
    def __init__(self, fanouts):
        self.fanouts = list(fanouts)
        self.rng = np.random.default_rng(0)

    def sample(self, g, seeds):
        if os.environ.get('FAKE_PEER_FAIL'):
            raise RuntimeError('fake peer failure requested by the test')
        frontier = np.unique(np.asarray(seeds))
        blocks = []
        for k in reversed(self.fanouts):
            picked = []
            for v in frontier:
                row = g.src[g.indptr[v]:g.indptr[v + 1]]
                if len(row) > k:
                    row = self.rng.choice(row, size=k, replace=False)
                picked.append(row)
            nbrs = np.concatenate(picked) if picked else np.zeros(0, dtype=np.int64)
            blocks.insert(0, _Block(len(nbrs)))
            frontier = np.unique(np.concatenate([frontier, nbrs]))
        return frontier, seeds, blocks
