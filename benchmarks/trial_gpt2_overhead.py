"""Issue 39's row `trial on the tiny GPT-2 / a hand-written script doing the same work`.

    python benchmarks/trial_gpt2_overhead.py --python TARGET [--device neuron] [--runs 3] --best

trial_models_overhead.py's GPT-2 half; --best interleaves the two commands and prints the best
of RUNS runs on the wall clock and on the CPU clock (user+sys of each command and its children).
"""

from trial_models_overhead import main

if __name__ == "__main__":
    main(("gpt2",))
