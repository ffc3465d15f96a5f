import unittest

from harness.workloads import EXCEPTION, HELLO, HELLO_SPACED, OUTPUT_1MB, PANDAS, SEQUENTIAL


class CheckTest(unittest.TestCase):
    def test_accepts_the_expected_run(self):
        self.assertIsNone(HELLO.check("hello\n", "", 0))

    def test_rejects_wrong_exit_code_and_missing_output(self):
        self.assertIn("exit code 1", HELLO.check("hello\n", "", 1))
        self.assertIn("stdout lacks", HELLO.check("", "", 0))
        self.assertIn("stdout lacks", PANDAS.check("ModuleNotFoundError", "", 0))

    def test_exception_needs_the_users_line_numbers(self):
        tb = ('Traceback (most recent call last):\n  File "script.py", line 7, in <module>\n'
              '  File "script.py", line 5, in outer\n  File "script.py", line 2, in inner\n'
              'ValueError: benchmark exception\n')
        self.assertIsNone(EXCEPTION.check("", tb, 1))
        self.assertIn("stderr lacks", EXCEPTION.check("", tb.replace("line 2", "line 9"), 1))

    def test_the_python_server_is_checked_with_its_own_traceback_line_numbers(self):
        # Its tracebacks count the lines of its wrapper file (README, Differences).
        theirs = ('Traceback (most recent call last):\n  File "/tmp/mcp-py-x/script.py", line 11, in <module>\n'
                  '    outer()\n  File "/tmp/mcp-py-x/script.py", line 6, in inner\n'
                  "    raise ValueError('benchmark exception')\nValueError: benchmark exception\n")
        self.assertIsNone(EXCEPTION.for_reference().check("", theirs, 1))
        self.assertIn("line 2, in inner", EXCEPTION.check("", theirs, 1))
        self.assertIs(HELLO.for_reference(), HELLO)

    def test_truncated_output_is_not_a_megabyte(self):
        self.assertIsNone(OUTPUT_1MB.check(("x" * 1023 + "\n") * 1024, "", 0))
        self.assertIn("bytes", OUTPUT_1MB.check("x" * 102400, "", 0))


class ScriptsTest(unittest.TestCase):
    def test_every_script_compiles(self):
        for w in SEQUENTIAL:
            compile(w.script, "script.py", "exec")

    def test_the_spaced_hello_is_the_hello_with_a_pause(self):
        self.assertEqual(HELLO_SPACED.script, HELLO.script)
        self.assertIsNone(HELLO_SPACED.check("hello\n", "", 0))
        self.assertGreater(HELLO_SPACED.pause_s, 0)
        self.assertEqual(HELLO.pause_s, 0)


if __name__ == "__main__":
    unittest.main()
