"""The scripts every system runs, and how to tell that a run really did the work.

The same script text goes to the server (as `execute_python`'s `script`) and to every baseline (as
a file), so the systems are compared on identical work.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

ONE_MIB = 1 << 20


@dataclass(frozen=True)
class Workload:
    key: str                 # short id used in JSON and file names
    title: str               # what the table shows
    script: str
    dependencies: tuple[str, ...] = ()
    expect_exit: int = 0
    expect_stdout: tuple[str, ...] = ()   # substrings stdout must contain
    expect_stderr: tuple[str, ...] = ()   # substrings stderr must contain
    min_stdout_bytes: int = 0
    timeout_seconds: int = 60
    pause_s: float = 0.0     # idle time after each measured call (not measured): an unhurried client
    # What the Python server's stderr must contain instead of expect_stderr, where it differs by
    # design (README, "Differences from the Python server"); None: the same.
    reference_stderr: Optional[tuple[str, ...]] = None

    def for_reference(self) -> "Workload":
        """This workload as the Python server is checked on it."""
        if self.reference_stderr is None:
            return self
        return dataclasses.replace(self, expect_stderr=self.reference_stderr)

    def check(self, stdout: str, stderr: str, exit_code: Optional[int]) -> Optional[str]:
        """None when the run did what the script does; otherwise what was wrong."""
        if exit_code != self.expect_exit:
            return (f"exit code {exit_code}, expected {self.expect_exit}; "
                    f"stderr: {_snip(stderr)}; stdout: {_snip(stdout)}")
        for s in self.expect_stdout:
            if s not in stdout:
                return f"stdout lacks {s!r}: {_snip(stdout)}; stderr: {_snip(stderr)}"
        for s in self.expect_stderr:
            if s not in stderr:
                return f"stderr lacks {s!r}: {_snip(stderr)}"
        n = len(stdout.encode("utf-8", "replace"))
        if n < self.min_stdout_bytes:
            return f"stdout has {n} bytes, expected at least {self.min_stdout_bytes}"
        return None


def _snip(text: str, limit: int = 300) -> str:
    text = text.strip()
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit // 2] + " ... " + text[-limit // 2:])


HELLO = Workload(
    key="hello", title="print('hello')",
    script="print('hello')\n",
    expect_stdout=("hello",))

# The same call from a client that is not in a hurry (an agent between two thoughts): each call
# finds the server idle and its next run's child prepared, as calls spaced by seconds do.
HELLO_SPACED = Workload(
    key="hello_spaced", title="print('hello'), one call every 0.25 s",
    script=HELLO.script, expect_stdout=HELLO.expect_stdout, pause_s=0.25)

# Debian's python3-numpy/-pandas. `dependencies` lets the server pick (or build) the environment
# whose zygote has pandas imported already; the baselines import it cold every call.
PANDAS = Workload(
    key="pandas", title="numpy + pandas",
    script=(
        "import numpy as np\n"
        "import pandas as pd\n"
        "df = pd.DataFrame({'x': np.arange(1000), 'g': np.arange(1000) % 7})\n"
        "print(int(df.groupby('g')['x'].sum().sum()))\n"),
    dependencies=("pandas",),
    expect_stdout=("499500",),
    timeout_seconds=120)

# The same script without `dependencies`: measured on the server only when it refuses the declared
# form (e.g. before environments exist), so the report still shows what pandas costs it. The
# baselines ignore `dependencies` anyway, so their numbers for PANDAS apply unchanged.
PANDAS_UNDECLARED = Workload(
    key="pandas_undeclared", title="numpy + pandas, dependencies not declared",
    script=PANDAS.script, expect_stdout=PANDAS.expect_stdout, timeout_seconds=PANDAS.timeout_seconds)

# Wall-clock bound rather than an iteration count, so it is 50 ms of work on any machine.
CPU_50MS = Workload(
    key="cpu50", title="50 ms CPU loop",
    script=(
        "import time\n"
        "end = time.perf_counter() + 0.05\n"
        "n = 0\n"
        "while time.perf_counter() < end:\n"
        "    n += 1\n"
        "print('iterations', n)\n"),
    expect_stdout=("iterations",))

OUTPUT_1MB = Workload(
    key="output1mb", title="1 MiB of output",
    script=(
        "import sys\n"
        "line = 'x' * 1023 + '\\n'\n"
        "sys.stdout.write(line * 1024)\n"),
    min_stdout_bytes=ONE_MIB - 1)  # a result may drop the final newline

EXCEPTION = Workload(
    key="exception", title="exception + traceback",
    script=(
        "def inner():\n"
        "    raise ValueError('benchmark exception')\n"
        "\n"
        "def outer():\n"
        "    inner()\n"
        "\n"
        "outer()\n"),
    expect_exit=1,
    expect_stderr=("Traceback", "line 2, in inner", "ValueError: benchmark exception"),
    # Its tracebacks count the lines of its own wrapper file, not the script's.
    reference_stderr=("Traceback", ", in inner", "ValueError: benchmark exception"))

SEQUENTIAL = (HELLO, HELLO_SPACED, PANDAS, CPU_50MS, OUTPUT_1MB, EXCEPTION)


def sleeper(seconds: float) -> Workload:
    """A hello run that stays alive, to measure what each concurrent run costs in memory."""
    return Workload(
        key="sleep", title=f"sleep {seconds:g} s",
        script=f"import time\ntime.sleep({seconds!r})\nprint('slept')\n",
        expect_stdout=("slept",), timeout_seconds=int(seconds) + 30)
