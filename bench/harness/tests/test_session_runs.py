import unittest

from harness import session_runs


def summary(p50):
    return {"n": 10, "p50": p50, "p90": p50 + 0.1, "p99": p50 + 0.2}


def ms(v):
    return "—" if v is None else f"{v:.2f}"


def judged(rows):
    """The rows' figures over the protocol, and the section's text with them."""
    got = session_runs.over_protocol(rows)
    return got, "\n".join(session_runs.section({"sessions": {**rows, **got}}, ms))


class OverProtocolTest(unittest.TestCase):
    def test_each_step_row_is_judged_against_the_protocol_in_the_same_conditions(self):
        rows = {"step_ms": summary(1.2), "protocol_ms": summary(0.1),
                "idle_step_ms": summary(1.3), "idle_protocol_ms": summary(0.5)}
        got = session_runs.over_protocol(rows)
        self.assertAlmostEqual(got["step_over_protocol_ms"], 1.1)
        self.assertAlmostEqual(got["idle_step_over_protocol_ms"], 0.8)

    def test_results_without_an_idle_protocol_row_fall_back_to_the_back_to_back_one(self):
        rows = {"step_ms": summary(1.2), "protocol_ms": summary(0.1), "idle_step_ms": summary(1.3)}
        self.assertAlmostEqual(session_runs.over_protocol(rows)["idle_step_over_protocol_ms"], 1.2)
        self.assertNotIn("idle_step_over_protocol_ms",
                         session_runs.over_protocol({"step_ms": summary(1.2), "protocol_ms": summary(0.1)}))

    def test_the_section_shows_both_protocol_rows_and_says_what_the_idle_step_is_measured_against(self):
        rows = {"step_ms": summary(1.2), "protocol_ms": summary(0.1), "idle_step_ms": summary(1.3),
                "idle_protocol_ms": summary(0.5), "reset_ms": summary(0.3), "fork_ms": summary(0.1)}
        rows.update(session_runs.over_protocol(rows))
        text = "\n".join(session_runs.section({"sessions": rows}, ms))
        self.assertIn("| `list_sessions`, the connection idle 20 ms before it | 10 | 0.50 |", text)
        self.assertIn("A step costs 1.10 ms (p50) over the protocol's own cost (target ≤ 0.5 ms), "
                      "0.80 ms when the session was idle before it (over `list_sessions` after the same idle)",
                      text)

    def test_steps_with_snapshots_off_are_judged_against_the_list_measured_alongside_them(self):
        rows = {"step_ms": summary(1.2), "protocol_ms": summary(0.1),
                "in_place_step_ms": summary(0.4), "in_place_protocol_ms": summary(0.15),
                "idle_in_place_step_ms": summary(1.1), "idle_in_place_protocol_ms": summary(0.3)}
        got, text = judged(rows)
        self.assertAlmostEqual(got["in_place_step_over_protocol_ms"], 0.25)
        self.assertAlmostEqual(got["idle_in_place_step_over_protocol_ms"], 0.8)
        self.assertIn("| the step with snapshots off (run in place: no fork), back to back | 10 | 0.40 |", text)
        self.assertIn("the same step costs 0.25 ms over `list_sessions` measured alongside, 0.80 ms after the "
                      "same idle: what taking the snapshot adds is the difference", text)

    def test_a_chain_of_kept_steps_is_judged_against_the_list_measured_in_its_loop(self):
        rows = {"step_ms": summary(0.6), "protocol_ms": summary(0.1),
                "chain_step_ms": summary(1.4), "chain_protocol_ms": summary(0.2)}
        got, text = judged(rows)
        self.assertAlmostEqual(got["chain_step_over_protocol_ms"], 1.2)
        self.assertIn("| a step right after the previous one, each kept (a chain, back to back) | 10 | 1.40 |", text)
        self.assertIn("A step costs 0.50 ms (p50) over the protocol's own cost (target ≤ 0.5 ms), 1.20 ms in a "
                      "chain of steps back to back, each kept;", text)

    def test_results_without_in_place_rows_say_nothing_of_them(self):
        rows = {"step_ms": summary(1.2), "protocol_ms": summary(0.1)}
        rows.update(session_runs.over_protocol(rows))
        self.assertNotIn("in_place_step_over_protocol_ms", rows)
        self.assertNotIn("snapshots off", "\n".join(session_runs.section({"sessions": rows}, ms)))


if __name__ == "__main__":
    unittest.main()
