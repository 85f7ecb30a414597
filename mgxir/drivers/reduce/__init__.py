"""mgx-reduce's driver: cut a program down to the smallest one that still shows a bug.

- `interesting.py`: the four interestingness tests (`--crash`, `--mismatch`, `--miscompile`,
  `--interesting`), each a picklable object that a worker process runs on a candidate;
- `strategies.py`: the delta passes, in the manner of llvm-reduce's: each has a `name` and yields
  candidate programs smaller than the current one;
- `engine.py`: the loop (every strategy, again until none shrinks the program), the pipeline
  bisection, the process pool and the cache of tried candidates by content fingerprint;
- `reproducer.py`: the output, one self-contained lossless reproducer with its inputs.
"""
