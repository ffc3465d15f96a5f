import unittest

from harness.stats import percentile, summarize_ns


class PercentileTest(unittest.TestCase):
    def test_interpolates_between_order_statistics(self):
        values = list(range(1, 101))  # 1..100
        self.assertAlmostEqual(percentile(values, 50), 50.5)
        self.assertAlmostEqual(percentile(values, 90), 90.1)
        self.assertAlmostEqual(percentile(values, 99), 99.01)
        self.assertEqual(percentile(values, 0), 1)
        self.assertEqual(percentile(values, 100), 100)

    def test_single_value_is_every_percentile(self):
        self.assertEqual(percentile([7.0], 50), 7.0)
        self.assertEqual(percentile([7.0], 99), 7.0)

    def test_rejects_no_values_and_bad_rank(self):
        with self.assertRaises(ValueError):
            percentile([], 50)
        with self.assertRaises(ValueError):
            percentile([1.0], 101)


class SummarizeTest(unittest.TestCase):
    def test_converts_nanoseconds_to_milliseconds(self):
        s = summarize_ns([3_000_000, 1_000_000, 2_000_000])
        self.assertEqual(s["n"], 3)
        self.assertAlmostEqual(s["p50"], 2.0)
        self.assertAlmostEqual(s["mean"], 2.0)
        self.assertAlmostEqual(s["min"], 1.0)
        self.assertAlmostEqual(s["max"], 3.0)

    def test_no_samples_gives_none(self):
        self.assertIsNone(summarize_ns([]))


if __name__ == "__main__":
    unittest.main()
