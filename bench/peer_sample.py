#!/usr/bin/env python3
"""The peer column of `hetsage bench`: the same neighbour sampling done by
DGL or PyG, on the same native dataset (indptr.npy, indices.npy), with the
same fanouts (from the seeds outward) and batch size.

usage: peer_sample.py --peer dgl|pyg --dataset DIR --fanouts 15,10,5
                      --batch B [--runs N] [--warmup N] [--serve]

Row v of the CSR lists the vertices v aggregates from, so the graph given to
the peer has an edge indices[e] -> v for every entry e of row v and the peer
samples in-edges. Seed sets are drawn uniformly without replacement, one per
run (the peers' RNGs are their own). Sampled edges per second are wall time
of whole batches, warm-up runs dropped. The last line printed is

  edges_per_s MEDIAN MIN MAX EDGES_PER_BATCH RUNS VERSION

which the tool parses; anything else goes to stderr.

With --serve the peer runs one batch per request instead, so that the tool
can alternate it with its own runs: it prints "ready VERSION" once the
graph is loaded, then answers each line read from stdin:

  threads T   torch.set_num_threads(T)       -> "ok"
  run I       one batch, seeds drawn for I   -> "run EDGES SECONDS"

and ends at the end of its input.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np


def load(dataset):
    indptr = np.load(os.path.join(dataset, 'indptr.npy')).astype(np.int64)
    indices = np.load(os.path.join(dataset, 'indices.npy')).astype(np.int64)
    n = indptr.shape[0] - 1
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    return n, indices, dst


def dgl_sampler(n, src, dst, fanouts):
    import dgl
    import torch
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    # DGL lists fanouts input layer first; ours start at the seeds.
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))

    def run(seeds):
        _, _, blocks = sampler.sample(g, torch.from_numpy(seeds))
        return sum(int(b.num_edges()) for b in blocks)
    return run, dgl.__version__


def pyg_sampler(n, src, dst, fanouts):
    import torch
    import torch_geometric
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    data = Data(edge_index=torch.from_numpy(np.stack([src, dst])), num_nodes=n)

    def run(seeds):
        loader = NeighborLoader(data, num_neighbors=list(fanouts), batch_size=len(seeds),
                                input_nodes=torch.from_numpy(seeds), shuffle=False)
        batch = next(iter(loader))
        return int(batch.edge_index.size(1))
    return run, torch_geometric.__version__


def serve(run, version, n, batch):
    import torch
    print(f'ready {version}', flush=True)
    for line in sys.stdin:
        words = line.split()
        if len(words) == 2 and words[0] == 'threads':
            torch.set_num_threads(max(1, int(words[1])))
            print('ok', flush=True)
        elif len(words) == 2 and words[0] == 'run':
            seeds = np.random.default_rng(77 + int(words[1])).choice(n, size=min(batch, n),
                                                                     replace=False)
            t0 = time.perf_counter()
            edges = run(seeds.astype(np.int64))
            print(f'run {edges} {time.perf_counter() - t0:.9f}', flush=True)
        else:
            print(f'unknown request: {line.strip()}', file=sys.stderr)
            return 2
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--peer', choices=['dgl', 'pyg'], required=True)
    ap.add_argument('--dataset', required=True)
    ap.add_argument('--fanouts', required=True)
    ap.add_argument('--batch', type=int, required=True)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--warmup', type=int, default=1)
    ap.add_argument('--serve', action='store_true')
    a = ap.parse_args()
    fanouts = [int(x) for x in a.fanouts.split(',') if x]
    n, src, dst = load(a.dataset)
    make = dgl_sampler if a.peer == 'dgl' else pyg_sampler
    run, version = make(n, src, dst, fanouts)
    if a.serve:
        return serve(run, version, n, a.batch)
    rates, edges = [], 0
    for r in range(-a.warmup, a.runs):
        seeds = np.random.default_rng(77 + r + a.warmup).choice(n, size=min(a.batch, n),
                                                                  replace=False)
        t0 = time.perf_counter()
        edges = run(seeds.astype(np.int64))
        dt = time.perf_counter() - t0
        if r >= 0:
            rates.append(edges / dt)
    print(f'edges_per_s {statistics.median(rates):.6g} {min(rates):.6g} {max(rates):.6g} '
          f'{edges} {len(rates)} {version}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
