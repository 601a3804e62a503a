#!/usr/bin/env python3
"""Summarize the last run of a trace.db written by `mpk run --backend gpu --trace`:
step times, and per task kind the executions, mean wait and run time, and for tasks
that stream weights the achieved bytes per second per SM. Standard library only."""
import sqlite3
import sys


def main(path):
    db = sqlite3.connect(path)
    run, graph, steps, workers = db.execute(
        "SELECT id, graph, steps, num_workers FROM run ORDER BY id DESC LIMIT 1").fetchone()
    rows = db.execute(
        """SELECT s.value, e.step, e.wait_begin_ns, e.start_ns, e.end_ns, t.bytes
           FROM execution e JOIN task t ON t.graph = ? AND t.id = e.task
           JOIN string s ON s.id = t.kind WHERE e.run = ?""", (graph, run)).fetchall()
    step_rows = db.execute("SELECT step, start_ns, end_ns FROM step WHERE run = ? ORDER BY step",
                           (run,)).fetchall()
    durs = sorted(e - s for _, s, e in step_rows[1:]) or [0]
    print(f"run {run}: {steps} steps, {workers} workers, {len(rows)} executions")
    print(f"step time: median {durs[len(durs) // 2] / 1e3:.1f} us, min {durs[0] / 1e3:.1f}, "
          f"max {durs[-1] / 1e3:.1f} (steps after the first)")
    kinds = {}
    busy = 0
    for kind, step, wb, st, en, nbytes in rows:
        k = kinds.setdefault(kind, [0, 0, 0, 0])
        k[0] += 1
        k[1] += st - wb
        k[2] += en - st
        k[3] += nbytes
        busy += en - st
    total = (step_rows[-1][2] - step_rows[0][1]) if step_rows else 1
    print(f"busy: {100.0 * busy / max(1, total * workers):.1f}% of worker time")
    print(f"{'kind':<18}{'count':>8}{'wait us':>10}{'run us':>10}{'GB/s/SM':>10}")
    for kind, (n, w, r, b) in sorted(kinds.items(), key=lambda kv: -kv[1][2]):
        bw = b / r if r else 0
        print(f"{kind:<18}{n:>8}{w / n / 1e3:>10.2f}{r / n / 1e3:>10.2f}{bw:>10.1f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "trace.db")
