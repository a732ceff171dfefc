"""Benchmarks of issue 7: the controller against a direct-API baseline on the same emulator.

* :mod:`bench.baseline`: OCCM's create/update/delete sequence with openstacksdk (the reference);
* :mod:`bench.baseline_job`: the baseline as a child process, so its CPU and memory are measured
  the same way as the controller's;
* :mod:`bench.harness`: the local control plane, the emulator, the controller process;
* :mod:`bench.watch`: when each Service got its IP and when it was deleted;
* :mod:`bench.procfs`: CPU seconds and resident memory of a process tree, from ``/proc``;
* :mod:`bench.stats`: pure summaries (median, spread, throughput, growth, targets);
* :mod:`bench.scenarios`: the five scenarios of the issue;
* :mod:`bench.clone`: scenario 3's fleet made from one converged Service (``--clone``), and
  :mod:`bench.clone_plan`, its pure part;
* :mod:`bench.quiet`: scenario 6, a quiet fleet's cost with drift checks on;
* :mod:`bench.run`: the command line (``python -m bench.run --help``);
* :mod:`bench.chart`: the PNG of scenario 2 (needs the optional ``bench`` extra: matplotlib);
* :mod:`bench.table`: the Markdown table of docs/performance.md from results files.
"""
