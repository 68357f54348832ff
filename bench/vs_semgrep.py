"""deadline-audit against semgrep on the same trees, same run, wall clock (SPEC §8).

    python bench/vs_semgrep.py TREE [TREE ...] [--semgrep PATH] [--runs 3]

Each TREE is copied into a scratch folder first (the fact cache never goes into it), and
the tool's package is byte-compiled first, as a wheel install leaves it.
Then, per tree, the two tools run in turn (A B A B ...), each as a whole process with
its default options:

- `deadline-audit check COPY` with the cache folder removed before each run (cold:
  every file is parsed, and the cache is written, as a first CI run does);
- `semgrep scan --config bench/semgrep/timeout-sites.yaml --metrics=off
  --disable-version-check COPY`: pattern rules for the sites deadline-audit extracts
  (transport deadlines, context deadlines, lease timers and renewals, env reads).

After the pairs: deadline-audit warm (nothing changed), warm with one source file
changed (a comment appended at its end) and warm with a line inserted at the top of that
file (every fact of the file moves: the graph and all checks run again). Printed: median wall seconds, the median of the pair-by-pair ratios
semgrep / deadline-audit (> 1: deadline-audit is faster), CPU seconds, peak RSS.
semgrep is not a project dependency: install it into its own virtualenv, e.g.
`python3 -m venv /tmp/semgrep-venv && /tmp/semgrep-venv/bin/pip install semgrep==1.185.0`.
Timings on a shared machine are noisy: quote medians and the pairwise ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RULES = HERE / "semgrep" / "timeout-sites.yaml"
SOURCE_SUFFIXES = (".go", ".py")


def timed(cmd: list[str], cwd: Path) -> dict:
    """Wall seconds, CPU seconds (user + sys of the finished child) and peak RSS (MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.stderr.write(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.decode(errors='replace')[-2000:]}\n")
    return {
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "rss": after.ru_maxrss / 1024,  # the largest child so far (KiB on Linux)
    }


def source_lines(tree: Path) -> tuple[int, int]:
    go = py = 0
    for path in tree.rglob("*"):
        if path.suffix in SOURCE_SUFFIXES and path.is_file() and ".git" not in path.parts:
            n = path.read_bytes().count(b"\n")
            if path.suffix == ".go":
                go += n
            else:
                py += n
    return go, py


def one_source_file(tree: Path) -> Path | None:
    for path in sorted(tree.rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and path.is_file() and not path.name.endswith("_test.go"):
            return path
    return None


def compile_tool(tool: str) -> None:
    """Write the tool's bytecode, as installing a wheel does (pip compiles it). An editable
    install under PYTHONDONTWRITEBYTECODE=1 (set on some CI images and shells) otherwise
    compiles each of its modules from source on every run: ~0.15 s of each measurement,
    which no installed copy pays."""
    python = Path(tool).with_name("python")
    if not python.exists():  # not a virtualenv script: leave it as it is
        return
    where = subprocess.run([str(python), "-c", "import deadline_audit, os; print(os.path.dirname(deadline_audit.__file__))"],
                           capture_output=True, text=True)
    if where.returncode == 0:
        subprocess.run([str(python), "-m", "compileall", "-q", where.stdout.strip()], check=False,
                       stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", type=Path, nargs="+")
    ap.add_argument("--semgrep", default=shutil.which("semgrep") or "/tmp/semgrep-venv/bin/semgrep")
    ap.add_argument("--deadline-audit", dest="tool", default=str(Path(sys.executable).with_name("deadline-audit")))
    ap.add_argument("--runs", type=int, default=3, help="pairs per tree (after one warm-up of each)")
    ap.add_argument("--da-config", type=Path, default=None,
                    help="a deadline-audit configuration, copied into each tree copy as deadline-audit.toml "
                         "(e.g. `include-tests = true`)")
    args = ap.parse_args()
    compile_tool(args.tool)

    rows = []
    with tempfile.TemporaryDirectory(prefix="da-vs-semgrep-") as scratch:
        for tree in args.trees:
            copy = Path(scratch) / tree.resolve().name
            shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".deadline-audit-cache"))
            cache = copy / ".deadline-audit-cache"
            if args.da_config is not None:  # in the copy's root: the root, and so the cache, stay there
                shutil.copyfile(args.da_config, copy / "deadline-audit.toml")
            da = [args.tool, "check", str(copy)]
            sg = [args.semgrep, "scan", "--config", str(RULES), "--metrics=off", "--disable-version-check", str(copy)]

            def da_cold() -> dict:
                shutil.rmtree(cache, ignore_errors=True)
                return timed(da, copy)

            da_cold(), timed(sg, copy)  # warm-up: page cache, semgrep's own caches
            pairs = [(da_cold(), timed(sg, copy)) for _ in range(args.runs)]
            print(f"{tree.name} pairs (deadline-audit s, semgrep s): "
                  + ", ".join(f"({a['wall']:.2f}, {b['wall']:.2f})" for a, b in pairs), file=sys.stderr)
            warm = [timed(da, copy) for _ in range(args.runs)]
            changed_file = one_source_file(copy)
            changed, shifted = [], []
            for i in range(args.runs):
                if changed_file is not None:
                    with changed_file.open("a", encoding="utf-8") as fh:
                        fh.write(f"\n// bench edit {i}\n" if changed_file.suffix == ".go" else f"\n# bench edit {i}\n")
                changed.append(timed(da, copy))
            for i in range(args.runs):
                if changed_file is not None:  # a line on top: every fact of the file moves
                    comment = "//" if changed_file.suffix == ".go" else "#"
                    changed_file.write_text(f"{comment} bench edit on top {i}\n" + changed_file.read_text(encoding="utf-8"),
                                            encoding="utf-8")
                shifted.append(timed(da, copy))
            go, py = source_lines(copy)
            med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
            rows.append({
                "tree": tree.name, "go_lines": go, "py_lines": py,
                "da_s": med([a for a, _ in pairs], "wall"), "sg_s": med([b for _, b in pairs], "wall"),
                "ratio": statistics.median(b["wall"] / a["wall"] for a, b in pairs),
                "da_cpu": med([a for a, _ in pairs], "cpu"), "sg_cpu": med([b for _, b in pairs], "cpu"),
                "warm_s": med(warm, "wall"), "changed_s": med(changed, "wall"), "shifted_s": med(shifted, "wall"),
            })

    print(f"cores usable: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()}, "
          f"{args.runs} alternating pairs per tree, medians")
    print("| tree | Go lines | Python lines | deadline-audit cold s | semgrep s | semgrep / deadline-audit "
          "| CPU s (da / semgrep) | warm s | one file changed s | one file, lines shifted s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['tree']} | {r['go_lines']:,} | {r['py_lines']:,} | {r['da_s']:.2f} | {r['sg_s']:.2f} "
              f"| {r['ratio']:.2f} × | {r['da_cpu']:.1f} / {r['sg_cpu']:.1f} | {r['warm_s']:.2f} | {r['changed_s']:.2f} "
              f"| {r['shifted_s']:.2f} |")


if __name__ == "__main__":
    main()
