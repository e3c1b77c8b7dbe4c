"""Issue 39's row `emulator: gpt2`, device / CPU (the row of emulator_overhead.py; run by hand).

    TARGET/bin/python benchmarks/emulator_gpt2.py [--clock cpu] [--compare BEFORE_SRC AFTER_SRC]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.argv[1:1] = ["--row", "gpt2"]

from emulator_overhead import main  # noqa: E402

main()
