#!/usr/bin/env python3
"""Alpha-beta scaling model of hetsage's distributed training.

usage: bench/dist_model.py BENCH.json [--compute-s C] [--markdown]

BENCH.json is bench/bench_dist.sh's output. For each link rate it holds
the link probe (alpha: half a small round trip; beta: bytes/s of large
messages, both through the communication module) and training runs of
every mode; each run's last epoch gives every rank's steps, compute time,
communication time and payload bytes.

1. Check: for every run, the communication time per step the model
   predicts from that run's bytes and the probed link, beside the one
   measured; and the epoch time predicted (steps x (compute + predicted
   communication)) beside the epoch's wall time.

       allreduce  t = 2 alpha + V_rank / beta    V_rank: bytes a rank sends in
                                                the step, both phases (links are
                                                full duplex: it receives as much
                                                meanwhile)
       ps         t = 2 alpha + (S_in + S_out) / beta
                                                S_in, S_out: bytes the busiest
                                                server receives (pushes) and
                                                sends (answers): one after the
                                                other on its link
       local      t = (A 2 alpha + E_rank / beta) / steps
                                                A averages in the epoch (every
                                                8 steps and at its end), E_rank
                                                the epoch's bytes of a rank

2. Scale: an ogbn-papers100M-sized run (1,207,179 training seeds, a
   3-layer GraphSAGE 128-256-256-172: 285,356 parameters, batch 1000 per
   machine) on 1 to 64 machines, epoch = ceil(S / (M B)) x (C + t(M)),
   with C the per-step compute time of one machine (--compute-s: measured
   by a single-process run of that shape; see bench/dist-scaling.md) and
   t(M) the all-reduce of the model, uncompressed and 1-bit, over the
   probed 1 Gbit/s link and over 10 and 25 Gbit/s links (same alpha).
   DistDGL's published figure: 13 s per epoch on 16 machines.
"""
import json
import math
import sys

SEEDS = 1207179
BATCH = 1000
PARAMS = 285356
HEADER = 16  # bytes per message header of the all-reduce


def allreduce_bytes(params, m, onebit):
    """Payload one rank sends in one all-reduce step of `params` floats."""
    if m == 1:
        return 0.0
    frac = (m - 1) / m
    # 1-bit: a sign bit per value and a scale per block of 128 values.
    per = params / 8 + 4 * math.ceil(params / 128) if onebit else 4 * params
    return 2 * frac * per + 2 * (m - 1) * HEADER


def predict_comm(run_mode, ranks, alpha, beta, period=8):
    """Predicted communication seconds per step of one run."""
    sync = run_mode.split("+")[0]
    steps = max(r["steps"] for r in ranks)
    if sync == "ps":
        v = max(r["bytes_sent"] + r["bytes_recv"] for r in ranks if r["role"] == "server")
        return 2 * alpha + v / steps / beta
    v = max(r["bytes_sent"] for r in ranks if r["role"] == "worker")
    if sync == "local":
        averages = math.ceil(steps / period)
        return (averages * 2 * alpha + v / beta) / steps
    return 2 * alpha + v / steps / beta


def check(bench):
    rows = []
    for rate in bench["rates"]:
        probe = rate["probe"]
        alpha = probe["link"]["alpha_us"] * 1e-6
        beta = probe["link"]["beta_mb_per_s"] * 1e6
        for run in rate["runs"]:
            ep = run["last_epoch"]
            ranks = ep["dist"]["ranks"]
            workers = [r for r in ranks if r["role"] == "worker"]
            steps = max(r["steps"] for r in workers)
            meas = max(r["comm_s_per_step"] for r in workers)
            comp = max(r["compute_s_per_step"] for r in workers)
            pred = predict_comm(run["mode"], ranks, alpha, beta)
            wall_pred = steps * (comp + pred)
            rows.append({
                "rate": rate["rate"], "mode": run["mode"], "steps": steps,
                "alpha_us": alpha * 1e6, "beta_mb_s": beta / 1e6,
                "bytes_per_step": max(r["bytes_sent_per_step"] for r in workers),
                "compute_ms": comp * 1e3, "comm_ms": meas * 1e3, "comm_model_ms": pred * 1e3,
                "comm_model_over_measured": pred / meas if meas > 0 else None,
                "epoch_s": ep["wall_s"], "epoch_model_s": wall_pred,
                "epoch_model_over_measured": wall_pred / ep["wall_s"] if ep["wall_s"] else None,
            })
    return rows


def scale(bench, compute_s):
    probe = None
    for rate in bench["rates"]:
        if rate["rate"] in ("1gbit", "1000mbit"):
            probe = rate["probe"]
    if probe is None:
        probe = bench["rates"][0]["probe"]
    alpha = probe["link"]["alpha_us"] * 1e-6
    beta1 = probe["link"]["beta_mb_per_s"] * 1e6
    links = [("probed", beta1), ("10gbit", 10e9 / 8), ("25gbit", 25e9 / 8)]
    rows = []
    for m in (1, 2, 4, 8, 16, 32, 64):
        steps = math.ceil(SEEDS / (m * BATCH))
        row = {"machines": m, "steps": steps}
        for name, beta in links:
            for onebit in (False, True):
                v = allreduce_bytes(PARAMS, m, onebit)
                t = 0.0 if m == 1 else 2 * alpha + v / beta
                key = "%s_%s" % (name, "1bit" if onebit else "none")
                row[key + "_comm_ms"] = t * 1e3
                row[key + "_epoch_s"] = steps * (compute_s + t)
        rows.append(row)
    return {"alpha_us": alpha * 1e6, "probed_beta_mb_s": beta1 / 1e6,
            "compute_s_per_step": compute_s, "rows": rows,
            "distdgl_16_machines_s": 13.0,
            "compute_s_per_step_to_match_distdgl":
                13.0 / math.ceil(SEEDS / (16 * BATCH)) - (2 * alpha + allreduce_bytes(PARAMS, 16, False) / (25e9 / 8))}


def markdown(checks, sc):
    out = ["| link | mode | steps | bytes/step | compute ms | comm ms | model ms | model/meas | epoch s | model s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in checks:
        out.append("| %s | %s | %d | %.0f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f |" % (
            r["rate"], r["mode"], r["steps"], r["bytes_per_step"], r["compute_ms"], r["comm_ms"],
            r["comm_model_ms"], r["comm_model_over_measured"] or 0, r["epoch_s"], r["epoch_model_s"]))
    if sc:
        out.append("")
        out.append("papers100M-sized epoch (s), per-step compute %.3f s; alpha %.0f us" % (
            sc["compute_s_per_step"], sc["alpha_us"]))
        out.append("")
        out.append("| machines | steps | 1 Gbit/s none | 1 Gbit/s 1bit | 10 Gbit/s none | 25 Gbit/s none | comm ms (1 Gbit/s, none / 1bit) |")
        out.append("| --- | --- | --- | --- | --- | --- | --- |")
        for r in sc["rows"]:
            out.append("| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f |" % (
                r["machines"], r["steps"], r["probed_none_epoch_s"], r["probed_1bit_epoch_s"],
                r["10gbit_none_epoch_s"], r["25gbit_none_epoch_s"],
                r["probed_none_comm_ms"], r["probed_1bit_comm_ms"]))
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    bench = json.load(open(args[0]))
    compute_s = None
    if "--compute-s" in args:
        compute_s = float(args[args.index("--compute-s") + 1])
    checks = check(bench)
    sc = scale(bench, compute_s) if compute_s is not None else None
    if "--markdown" in args:
        print(markdown(checks, sc))
    else:
        print(json.dumps({"check": checks, "scaling": sc}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
