#!/usr/bin/env python3
"""Attention task durations by decode position in the last run of a trace.db (`mpk run
--backend gpu --trace`): per bucket of 16 steps (step s attends over positions 0..s), the
mean and max run time of the attention-kind tasks, and the mean step time. Shows whether
attention grows with the position, and by how much. Standard library only.
Usage: attention_positions.py trace.db [bucket]"""
import sqlite3
import sys


def main(path, bucket=16):
    db = sqlite3.connect(path)
    run, graph = db.execute("SELECT id, graph FROM run ORDER BY id DESC LIMIT 1").fetchone()
    rows = db.execute(
        """SELECT e.step, e.end_ns - e.start_ns, s.value FROM execution e
           JOIN task t ON t.graph = ? AND t.id = e.task JOIN string s ON s.id = t.kind
           WHERE e.run = ? AND s.value LIKE 'attention%'""", (graph, run)).fetchall()
    steps = dict(db.execute("SELECT step, end_ns - start_ns FROM step WHERE run = ?", (run,)).fetchall())
    kinds = sorted({k for _, _, k in rows})
    print(f"run {run}: attention kinds {', '.join(kinds)}; us per task (mean / max), step us")
    print(f"{'steps':>9} {'mean':>8} {'max':>8} {'step':>9}")
    by = {}
    for step, dur, _ in rows:
        by.setdefault(step // bucket, []).append(dur)
    for b in sorted(by):
        d = by[b]
        st = [steps[s] for s in range(b * bucket, (b + 1) * bucket) if s in steps and s > 0]
        step_us = f"{sum(st) / len(st) / 1e3:9.1f}" if st else f"{'-':>9}"
        print(f"{b * bucket:>4}-{(b + 1) * bucket - 1:<4} {sum(d) / len(d) / 1e3:8.2f} {max(d) / 1e3:8.2f} {step_us}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 16)
