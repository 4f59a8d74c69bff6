#!/usr/bin/env python3
"""The PyTorch peer of bench_ctr: the same CTR model (LR, DeepFM or DLRM)
built on nn.EmbeddingBag, trained on the same examples in the same order
with the same hyper-parameters, on the same machine.

usage: peer_ctr.py --train PREFIX --test PREFIX --model deepfm|dlrm|lr
                   [--dim D] [--hidden 256,128] [--bottom 64] [--batch B]
                   [--lr X] [--sparse-optimizer adagrad|elementwise-adagrad|sgd|adam]
                   [--sparse-lr X] [--sparse-eps X] [--sparse-init-acc A]
                   [--init-range R] [--standardize-dense] [--epochs N]
                   [--threads T] [--seed S]

PREFIX_label.npy (int32 [N]), PREFIX_dense.npy (float32 [N, 13], already
log-transformed) and PREFIX_ids.npy (int64 [N, 26]) are what
`bench_ctr dump` writes from the Criteo-layout text with hetsage's own
parser, so both sides see the same values. The ids of each field are mapped
to rows of one nn.EmbeddingBag (mode sum, sparse gradients, one id per
bag) before timing starts: the hash-table work hetsage does inside its
timed loop is done here for free. Test ids never seen in training read the
zero padding row, as hetsage's store reads an id without a row.

The model matches hetsage's (runtime/ctr/ctr_model.h): DeepFM is
c + x.w + sum_f e_f[D] + FM(e) + MLP([e, x]); DLRM is a bottom MLP (ReLU
throughout) to D, the dot products of every pair among (z, e_1..e_26)
(i > j, row by row) next to z, and a top MLP; MLPs have ReLU after every
layer but the last, Glorot-uniform weights and zero biases; rows start
U(-R, R). Dense parameters train with Adam; rows with the sparse optimizer.
'adagrad' is hetsage's row-wise Adagrad (one accumulator per row, of the
mean squared gradient; eps 1e-8), written here on the sparse gradient since
torch has none; 'elementwise-adagrad' is torch's own (one accumulator per
coordinate). Both take hetsage's eps, 1e-8 (torch's Adagrad defaults to
1e-10), unless --sparse-eps says otherwise, and start their accumulators
at --sparse-init-acc (hetsage's --sparse-init-acc, torch's
initial_accumulator_value; default 0). torch's SparseAdam counts steps
per table where hetsage counts them per row.

--standardize-dense standardizes the 13 integers as hetsage's option of
that name does: each column's mean and (population) standard deviation
over the first batch of the training rows, an sd below 1e-6 taken as 1,
x' = (x - mean) / sd in float32 for training and test rows alike.

Each epoch is timed by wall clock from the first batch to the last
optimizer step. The last line printed is one JSON object; anything else
goes to stderr.
"""
import argparse
import json
import sys
import time

import numpy as np


def load(prefix):
    y = np.load(prefix + '_label.npy', mmap_mode='r')
    x = np.load(prefix + '_dense.npy', mmap_mode='r')
    ids = np.load(prefix + '_ids.npy', mmap_mode='r')
    return y, x, ids


def build_index(train_ids, test_ids):
    """Per field, train ids -> rows 1.. of one table (0: padding)."""
    n_fields = train_ids.shape[1]
    tr = np.empty(train_ids.shape, dtype=np.int64)
    te = np.empty(test_ids.shape, dtype=np.int64)
    base = 1
    for f in range(n_fields):
        uniq, inv = np.unique(np.asarray(train_ids[:, f]), return_inverse=True)
        tr[:, f] = inv + base
        pos = np.searchsorted(uniq, np.asarray(test_ids[:, f]))
        pos = np.minimum(pos, len(uniq) - 1)
        found = uniq[pos] == np.asarray(test_ids[:, f])
        te[:, f] = np.where(found, pos + base, 0)
        base += len(uniq)
    return tr, te, base


def auc(scores, labels):
    order = np.argsort(scores, kind='mergesort')
    s = scores[order]
    y = labels[order].astype(np.float64)
    # Average ranks over ties.
    ranks = np.empty(len(s), dtype=np.float64)
    i = 0
    n = len(s)
    idx = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate(([0], idx))
    ends = np.concatenate((idx, [n]))
    for a, b in zip(starts, ends):
        ranks[a:b] = 0.5 * (a + b - 1) + 1
    pos = y.sum()
    neg = n - pos
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


class RowwiseAdagrad:
    """hetsage's row-wise Adagrad (runtime/embed/embed_optim.c) on a sparse
    gradient: acc[r] += mean_k g[r, k]^2; w[r] -= lr / (sqrt(acc[r]) + eps) g[r]."""

    def __init__(self, weight, lr, eps, initial_acc=0.0):
        import torch
        self.w, self.lr, self.eps = weight, lr, eps
        self.acc = torch.full((weight.shape[0],), initial_acc, dtype=weight.dtype)

    def zero_grad(self, set_to_none=True):
        self.w.grad = None

    def step(self):
        import torch
        if self.w.grad is None:
            return
        g = self.w.grad.coalesce()
        rows, vals = g.indices()[0], g.values()
        with torch.no_grad():
            acc = self.acc.index_add_(0, rows, (vals * vals).mean(1))[rows]
            self.w.index_add_(0, rows, -(self.lr / (acc.sqrt() + self.eps)).unsqueeze(1) * vals)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--train', required=True)
    p.add_argument('--test', required=True)
    p.add_argument('--model', choices=['lr', 'deepfm', 'dlrm'], default='deepfm')
    p.add_argument('--dim', type=int, default=16)
    p.add_argument('--hidden', default='256,128')
    p.add_argument('--bottom', default='64')
    p.add_argument('--batch', type=int, default=4096)
    p.add_argument('--lr', type=float, default=1e-3)
    p.add_argument('--sparse-optimizer',
                   choices=['adagrad', 'elementwise-adagrad', 'sgd', 'adam'], default='adagrad')
    p.add_argument('--sparse-lr', type=float, default=0.05)
    p.add_argument('--sparse-eps', type=float, default=1e-8)
    p.add_argument('--sparse-init-acc', type=float, default=0.0)
    p.add_argument('--init-range', type=float, default=0.05)
    p.add_argument('--standardize-dense', action='store_true')
    p.add_argument('--epochs', type=int, default=1)
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--seed', type=int, default=1)
    a = p.parse_args()

    import torch
    import torch.nn as nn

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(a.seed)
    t0 = time.time()
    ytr, xtr, itr = load(a.train)
    yte, xte, ite = load(a.test)
    rows_tr, rows_te, n_rows = build_index(itr, ite)
    x_tr = torch.from_numpy(np.ascontiguousarray(xtr, dtype=np.float32))
    y_tr = torch.from_numpy(np.ascontiguousarray(ytr, dtype=np.float32))
    r_tr = torch.from_numpy(rows_tr)
    x_te = torch.from_numpy(np.ascontiguousarray(xte, dtype=np.float32))
    if a.standardize_dense:
        first = np.asarray(xtr[:a.batch], dtype=np.float64)
        mu = first.mean(0)
        sd = np.sqrt(((first - mu) ** 2).mean(0))
        inv = np.where(sd < 1e-6, 1.0, 1.0 / np.where(sd < 1e-6, 1.0, sd))
        mu_t = torch.from_numpy(mu.astype(np.float32))
        inv_t = torch.from_numpy(inv.astype(np.float32))
        x_tr = (x_tr - mu_t) * inv_t
        x_te = (x_te - mu_t) * inv_t
    r_te = torch.from_numpy(rows_te)
    print(f'peer_ctr: loaded and indexed {len(ytr)} + {len(yte)} examples, {n_rows} rows '
          f'in {time.time() - t0:.1f} s', file=sys.stderr)

    F = rows_tr.shape[1]
    n_dense = x_tr.shape[1]
    D = a.dim
    R = 1 if a.model == 'lr' else D + 1 if a.model == 'deepfm' else D
    hidden = [int(w) for w in a.hidden.split(',') if w]
    bottom = [int(w) for w in a.bottom.split(',') if w]

    def mlp(widths, relu_last):
        layers = []
        for i in range(len(widths) - 1):
            lin = nn.Linear(widths[i], widths[i + 1])
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)
            layers.append(lin)
            if i + 2 < len(widths) or relu_last:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.EmbeddingBag(n_rows, R, mode='sum', sparse=True, padding_idx=0)
            with torch.no_grad():
                self.emb.weight.uniform_(-a.init_range, a.init_range)
                self.emb.weight[0].zero_()
            if a.model in ('lr', 'deepfm'):
                self.w = nn.Parameter(torch.zeros(n_dense))
                self.c = nn.Parameter(torch.zeros(()))
            if a.model == 'deepfm':
                self.deep = mlp([F * D + n_dense] + hidden + [1], False)
            if a.model == 'dlrm':
                self.bot = mlp([n_dense] + bottom + [D], True)
                self.top = mlp([D + F * (F + 1) // 2] + hidden + [1], False)
                li, lj = torch.tril_indices(F + 1, F + 1, offset=-1)
                self.register_buffer('li', li)
                self.register_buffer('lj', lj)

        def forward(self, x, rows):
            b = rows.shape[0]
            flat = rows.reshape(-1)
            offsets = torch.arange(flat.shape[0], dtype=torch.int64)
            e = self.emb(flat, offsets).view(b, F, R)
            if a.model == 'lr':
                return self.c + x @ self.w + e[:, :, 0].sum(1)
            if a.model == 'deepfm':
                v = e[:, :, :D]
                s = v.sum(1)
                fm = 0.5 * ((s * s).sum(1) - (v * v).sum((1, 2)))
                deep = self.deep(torch.cat([v.reshape(b, F * D), x], 1)).squeeze(1)
                return self.c + x @ self.w + e[:, :, D].sum(1) + fm + deep
            z = self.bot(x)
            t = torch.cat([z.unsqueeze(1), e], 1)
            dots = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
            return self.top(torch.cat([z, dots], 1)).squeeze(1)

    model = Model()
    dense_params = [p_ for n_, p_ in model.named_parameters() if not n_.startswith('emb.')]
    dense_opt = torch.optim.Adam(dense_params, lr=a.lr) if dense_params else None
    if a.sparse_optimizer == 'adagrad':
        sparse_opt = RowwiseAdagrad(model.emb.weight, a.sparse_lr, a.sparse_eps, a.sparse_init_acc)
    elif a.sparse_optimizer == 'elementwise-adagrad':
        sparse_opt = torch.optim.Adagrad([model.emb.weight], lr=a.sparse_lr, eps=a.sparse_eps,
                                         initial_accumulator_value=a.sparse_init_acc)
    elif a.sparse_optimizer == 'sgd':
        sparse_opt = torch.optim.SGD([model.emb.weight], lr=a.sparse_lr)
    else:
        sparse_opt = torch.optim.SparseAdam([model.emb.weight], lr=a.sparse_lr)
    loss_fn = nn.BCEWithLogitsLoss()
    n = len(y_tr)
    epochs = []
    for ep in range(a.epochs):
        t0 = time.time()
        total = 0.0
        steps = 0
        for s0 in range(0, n, a.batch):
            s1 = min(n, s0 + a.batch)
            logit = model(x_tr[s0:s1], r_tr[s0:s1])
            loss = loss_fn(logit, y_tr[s0:s1])
            if dense_opt:
                dense_opt.zero_grad(set_to_none=True)
            sparse_opt.zero_grad(set_to_none=True)
            loss.backward()
            if dense_opt:
                dense_opt.step()
            sparse_opt.step()
            total += float(loss.detach())
            steps += 1
        dt = time.time() - t0
        epochs.append({'seconds': dt, 'examples_per_s': n / dt, 'loss': total / steps})
        print(f'peer_ctr: epoch {ep + 1}: {n / dt:.0f} examples/s, loss {total / steps:.4f}',
              file=sys.stderr)
    model.eval()
    probs = []
    with torch.no_grad():
        for s0 in range(0, len(yte), a.batch):
            s1 = min(len(yte), s0 + a.batch)
            probs.append(torch.sigmoid(model(x_te[s0:s1], r_te[s0:s1])).numpy())
    pr = np.concatenate(probs).astype(np.float64)
    yt = np.asarray(yte).astype(np.float64)
    q = np.clip(np.where(yt == 1, pr, 1 - pr), 1e-7, 1 - 1e-7)
    print(json.dumps({'peer': 'pytorch', 'version': torch.__version__, 'model': a.model,
                      'threads': a.threads, 'epochs': epochs, 'test_auc': auc(pr, yt),
                      'test_logloss': float(-np.log(q).mean()), 'rows': n_rows}))


if __name__ == '__main__':
    main()
