#!/usr/bin/env python3
"""Does PyTorch take the same training steps as hetsage's DLRM? Starts the
PyTorch model of bench/peer_ctr.py from a hetsage CTR checkpoint (dense
parameters, Adam's moments and step, embedding rows and their optimizer
state), trains it on the next batches of the same examples with the same
rule, and compares the result with hetsage's checkpoint after those
batches: dense parameters, every row, every accumulator. A difference in
the rule (eps, how duplicate ids are summed, the initial accumulator, the
learning rate) shows after one batch; float rounding alone leaves
relative differences near 1e-6.

usage: ctr_step_check.py --init CK0 [--start CKA --first A] --end CKB
                         --batches K --data PREFIX [--eps X] [--threads T]

CK0 is a checkpoint of a run over at least A + K batches with both rates at
1e-30 (hetsage refuses 0): its rows are the rows' initial values, for ids
that CKA has not seen yet. CKA (default: CK0, A = 0, fresh Adam state) is
hetsage's state after A batches, CKB after A + K (runs over files of the
first A and A + K batches of one file: training is deterministic, so the
second run passes through the first's state). PREFIX_{label,dense,ids}.npy
are that file as `bench_ctr dump` writes it. DLRM only; sparse optimizers
elementwise-adagrad, adagrad (row-wise) and sgd, with the checkpoint's
rates. Prints one JSON object.

Example (10^6-row data, 120 and 121 batches of 4096):
  head -n 491520 train.txt > b120.txt; head -n 495616 train.txt > b121.txt
  hetsage train --task ctr --data b121.txt --model dlrm --lr 1e-30 \\
      --sparse-lr 1e-30 --checkpoint ck0 (and the real runs into ck120, ck121)
  ctr_step_check.py --init ck0/last.ckpt --start ck120/last.ckpt --first 120 \\
      --end ck121/last.ckpt --batches 1 --data peer/train
"""
import argparse
import json
import struct
import sys

import numpy as np

MAX_HIDDEN = 7  # HS_CTR_MAX_HIDDEN
N_U32 = 6 + MAX_HIDDEN + 1 + MAX_HIDDEN + 2
OPTIMIZERS = {0: 'adagrad', 1: 'sgd', 4: 'elementwise-adagrad'}  # hs_sparse_optimizer
DLRM = 3  # HS_CTR_DLRM


def parse(path):
    """A CTR checkpoint (runtime/ctr/ctr_session.c, version 2) and its
    embedding store section (runtime/embed/embed_io.c)."""
    d = open(path, 'rb').read()
    if d[:8] != b'HSCTRCK1':
        sys.exit(f'{path}: not a hetsage CTR checkpoint')
    o = 8
    u = struct.unpack_from(f'<{N_U32}I', d, o)
    o += 4 * N_U32
    if u[0] != 2:
        sys.exit(f'{path}: CTR checkpoint version {u[0]} (this script reads 2)')
    f = struct.unpack_from('<3f', d, o)
    o += 12
    q = struct.unpack_from('<6Q', d, o)
    o += 48
    batch = struct.unpack_from('<I', d, o)[0]
    init_acc = struct.unpack_from('<f', d, o + 4)[0]
    o += 24
    n = q[4]
    p = np.frombuffer(d, np.float32, 3 * n, o).copy()
    o += 12 * n + 4
    if d[o:o + 8] != b'HSEMBED1':
        sys.exit(f'{path}: no embedding store section where expected')
    o += 8
    _, dim, n_tables, _, sw, _ = struct.unpack_from('<6I', d, o)
    o += 24 + 16
    rec = np.dtype([('id', '<u8'), ('tick', '<u4'), ('v', '<f4', (dim + sw,))])
    tables = []
    for _ in range(n_tables):
        m, n_pend = struct.unpack_from('<2Q', d, o)
        o += 16
        tables.append(np.frombuffer(d, rec, m, o))
        o += m * rec.itemsize + n_pend * 16
    k = 1
    model, dim_, n_fields, n_dense, n_hidden = u[k:k + 5]
    k += 5
    hidden = list(u[k:k + n_hidden])
    k += MAX_HIDDEN
    n_bottom = u[k]
    bottom = list(u[k + 1:k + 1 + n_bottom])
    k += 1 + MAX_HIDDEN
    return dict(model=model, dim=dim, n_fields=n_fields, n_dense=n_dense, hidden=hidden,
                bottom=bottom, optimizer=u[k], lr=f[0], sparse_lr=f[1], step=q[5], batch=batch,
                init_acc=init_acc, params=p[:n], m=p[n:2 * n], v=p[2 * n:], sw=sw, tables=tables)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--init', required=True)
    ap.add_argument('--start')
    ap.add_argument('--first', type=int, default=0)
    ap.add_argument('--end', required=True)
    ap.add_argument('--batches', type=int, required=True)
    ap.add_argument('--data', required=True)
    ap.add_argument('--eps', type=float, default=1e-8)
    ap.add_argument('--threads', type=int, default=1)
    a = ap.parse_args()

    import torch
    import torch.nn as nn
    torch.set_num_threads(a.threads)
    c0 = parse(a.init)
    ca = parse(a.start) if a.start else c0
    cb = parse(a.end)
    if a.first and not a.start:
        sys.exit('--first needs --start')
    if a.start and (ca['optimizer'] != cb['optimizer'] or ca['sw'] != cb['sw']):
        sys.exit(f'{a.start} and {a.end}: different sparse optimizers')
    if cb['model'] != DLRM or cb['optimizer'] not in OPTIMIZERS:
        sys.exit('DLRM with sgd, adagrad or elementwise-adagrad only')
    opt = OPTIMIZERS[cb['optimizer']]
    D, F, B = cb['dim'], cb['n_fields'], cb['batch']
    A, K = a.first, a.batches
    y = np.load(a.data + '_label.npy', mmap_mode='r')[:(A + K) * B]
    x = np.load(a.data + '_dense.npy', mmap_mode='r')[:(A + K) * B]
    ids = np.load(a.data + '_ids.npy', mmap_mode='r')[:(A + K) * B]
    if len(y) < (A + K) * B:
        sys.exit(f'{a.data}: {len(y)} examples, fewer than {A + K} batches of {B}')

    # Rows: per field, the ids of CK0 in increasing order (row 0 unused).
    keys, base, rows = [], [1], np.empty(ids.shape, np.int64)
    for f in range(F):
        k = c0['tables'][f]['id']
        col = np.asarray(ids[:, f]).astype(np.uint64)
        pos = np.minimum(np.searchsorted(k, col), len(k) - 1)
        if not (k[pos] == col).all():
            sys.exit(f'{a.init}: field {f} lacks ids of the batches (a run over fewer batches?)')
        rows[:, f] = pos + base[-1]
        keys.append(k)
        base.append(base[-1] + len(k))
    n_rows = base[-1]
    sw = 0 if opt == 'sgd' else 1 if opt == 'adagrad' else D
    W0 = np.zeros((n_rows, D), np.float32)
    S0 = np.full((n_rows, max(sw, 1)), ca['init_acc'], np.float32)
    for f in range(F):
        t = c0['tables'][f]
        W0[base[f] + np.searchsorted(keys[f], t['id'])] = t['v'][:, :D]
        if a.start:
            t = ca['tables'][f]
            r = base[f] + np.searchsorted(keys[f], t['id'])
            W0[r] = t['v'][:, :D]
            S0[r] = t['v'][:, D:D + sw]

    def mlp(widths, relu_last):
        layers = []
        for i in range(len(widths) - 1):
            layers.append(nn.Linear(widths[i], widths[i + 1]))
            if i + 2 < len(widths) or relu_last:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    bot = mlp([cb['n_dense']] + cb['bottom'] + [D], True)
    top = mlp([D + F * (F + 1) // 2] + cb['hidden'] + [1], False)
    lins = [m for m in list(bot) + list(top) if isinstance(m, nn.Linear)]
    li, lj = torch.tril_indices(F + 1, F + 1, offset=-1)
    emb = torch.from_numpy(W0)
    acc = torch.from_numpy(S0)

    def pieces(flat):
        """(parameter, hetsage's slice of flat as the parameter's shape)."""
        o = 0
        for m in lins:
            n = m.in_features * m.out_features
            yield m.weight, torch.from_numpy(flat[o:o + n].reshape(m.in_features, m.out_features).T.copy())
            o += n
            yield m.bias, torch.from_numpy(flat[o:o + m.out_features].copy())
            o += m.out_features

    dense = [m for m, _ in pieces(ca['params'])]
    adam = torch.optim.Adam(dense, lr=cb['lr'])
    with torch.no_grad():
        for (p, v), (_, m1), (_, v1) in zip(pieces(ca['params']), pieces(ca['m']), pieces(ca['v'])):
            p.copy_(v)
            if a.start:
                adam.state[p] = {'step': torch.tensor(float(ca['step'])), 'exp_avg': m1,
                                 'exp_avg_sq': v1}
    X = torch.from_numpy(np.array(x, dtype=np.float32))
    Y = torch.from_numpy(np.array(y, dtype=np.float32))
    R = torch.from_numpy(rows)
    losses = []
    for b in range(A, A + K):
        s0, s1 = b * B, (b + 1) * B
        r = R[s0:s1]
        uniq, inv = torch.unique(r.reshape(-1), return_inverse=True)
        e = emb[uniq].clone().requires_grad_(True)
        z = bot(X[s0:s1])
        t = torch.cat([z.unsqueeze(1), e[inv].view(-1, F, D)], 1)
        dots = torch.bmm(t, t.transpose(1, 2))[:, li, lj]
        logit = top(torch.cat([z, dots], 1)).squeeze(1)
        loss = nn.functional.binary_cross_entropy_with_logits(logit, Y[s0:s1])
        adam.zero_grad(set_to_none=True)
        loss.backward()
        adam.step()
        g = e.grad  # each row's gradient summed over its occurrences
        with torch.no_grad():
            lr = cb['sparse_lr']
            if opt == 'sgd':
                emb[uniq] -= lr * g
            elif opt == 'adagrad':
                acc[uniq, 0] += (g * g).mean(1)
                emb[uniq] -= lr / (acc[uniq, 0].sqrt() + a.eps).unsqueeze(1) * g
            else:
                acc[uniq] += g * g
                emb[uniq] -= lr * g / (acc[uniq].sqrt() + a.eps)
        losses.append(float(loss))

    ours = np.concatenate([p.detach().numpy().reshape(-1) for p, _ in pieces(cb['params'])])
    theirs = np.concatenate([v.numpy().reshape(-1) for _, v in pieces(cb['params'])])
    dw, ds, n_cmp = [], [], 0
    for f in range(F):
        t = cb['tables'][f]
        pos = np.minimum(np.searchsorted(keys[f], t['id']), len(keys[f]) - 1)
        ok = keys[f][pos] == t['id']
        r = base[f] + pos[ok]
        n_cmp += int(ok.sum())
        dw.append(np.abs(emb.numpy()[r] - t['v'][ok, :D]).max(1))
        if sw:
            s = t['v'][ok, D:D + sw]
            # Relative, where the accumulator holds a gradient of 1e-7 or more.
            big = np.abs(s) >= 1e-14
            ds.append(np.where(big, np.abs(acc.numpy()[r] - s) / np.where(big, s, 1), 0).max(1))
    dw = np.concatenate(dw)
    ds = np.concatenate(ds) if ds else np.zeros(1)
    print(json.dumps({
        'optimizer': opt, 'eps': a.eps, 'first_batch': A, 'batches': K,
        'loss_pytorch': losses,
        'dense_max_abs_diff': float(np.abs(ours - theirs).max()),
        'dense_max_abs': float(np.abs(theirs).max()),
        'rows_compared': n_cmp,
        'row_max_abs_diff': float(dw.max()),
        'rows_over_1e-5': int((dw > 1e-5).sum()),
        'state_max_rel_diff_over_1e-14': float(ds.max()),
    }))


if __name__ == '__main__':
    main()
