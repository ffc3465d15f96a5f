"""Sessions on the server under test, over its stdio MCP connection: a step in a warm session
(`x + 1`) against the protocol's own cost (`list_sessions`, answered without running anything),
the same step with snapshots off (run in place: no fork, no page copies, so what a snapshot adds
is the difference), `reset_session`, `fork_session`, and the memory each snapshot of a pandas
session adds."""

from __future__ import annotations

import time
from typing import Optional

from harness.client import HarnessError, RequestTimeout, ServerExited, tool_outcome
from harness.stats import summarize_ns

# Steps taken to measure the memory per snapshot (each keeps one snapshot: --session-snapshots
# must be at least this, which the default 8 is).
SNAPSHOT_STEPS = 6
# How long the session is left idle before each step of the "idle" row: an agent's next call
# comes far later than this, and the step finds the session as it then does (its next process
# forked and rehearsed ahead), where the step of the main row comes right after a rewind.
IDLE_SECONDS = 0.02
# A thread left running makes every later step of a session run in place (a process with threads
# cannot be forked safely): the step without the snapshot's fork.
THREAD_SCRIPT = ("import threading, time\n"
                 "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
                 "x = 1")


def _call(server, name: str, arguments: dict, timeout: float = 120.0) -> tuple[dict, int]:
    resp = server.call_tool(name, arguments, timeout=timeout)
    out = tool_outcome(resp)
    if out["is_error"]:
        raise HarnessError(f"{name} failed: {out['text'][:300]}")
    return out, resp.latency_ns


def _create(server, dependencies: list[str]) -> str:
    out, _ = _call(server, "create_session", {"dependencies": dependencies}, timeout=600.0)
    return (out["structured"] or {})["session_id"]


def _memory_bytes(server, session_id: str) -> Optional[int]:
    out, _ = _call(server, "list_sessions", {})
    for s in (out["structured"] or {}).get("sessions", []):
        if s.get("session_id") == session_id:
            value = s.get("memory_bytes", -1)
            return value if value >= 0 else None
    return None


def _step(server, sid: str, snapshots: bool) -> int:
    o, step_ns = _call(server, "execute_python", {"session_id": sid, "script": "x + 1"})
    st = o["structured"] or {}
    if st.get("return_value", {}).get("repr") != "2":
        raise HarnessError(f"a step answered {o['text'][:200]}")
    if st.get("session", {}).get("snapshots") is not snapshots:
        raise HarnessError(f"a step was to run with snapshots {'on' if snapshots else 'off'}: {o['text'][-300:]}")
    return step_ns


def _after_idle(server, sid: str, snapshots: bool, warmup: int, iterations: int,
                rewind: bool = False) -> tuple[list[int], list[int]]:
    """Steps and `list_sessions` calls, each after IDLE_SECONDS; `rewind`: each step is undone
    (back to step 1) before the idle that precedes the list."""
    steps, protocol = [], []
    for i in range(warmup + iterations):
        time.sleep(IDLE_SECONDS)
        step_ns = _step(server, sid, snapshots)
        if rewind:
            _call(server, "reset_session", {"session_id": sid, "step": 1})
        time.sleep(IDLE_SECONDS)
        _, list_ns = _call(server, "list_sessions", {})
        if i >= warmup:
            steps.append(step_ns)
            protocol.append(list_ns)
    return steps, protocol


def _back_to_back(server, sid: str, snapshots: bool, warmup: int, iterations: int) -> tuple[list[int], list[int]]:
    """Steps back to back, each kept, each followed by `list_sessions` (the protocol's own cost
    in the same loop)."""
    steps, protocol = [], []
    for i in range(warmup + iterations):
        step_ns = _step(server, sid, snapshots)
        _, list_ns = _call(server, "list_sessions", {})
        if i >= warmup:
            steps.append(step_ns)
            protocol.append(list_ns)
    return steps, protocol


def _chain(server, warmup: int, iterations: int) -> tuple[list[int], list[int]]:
    """A chain of kept steps back to back, in a session of its own."""
    sid = _create(server, [])
    _call(server, "execute_python", {"session_id": sid, "script": "x = 1"})
    rows = _back_to_back(server, sid, True, warmup, iterations)
    _call(server, "close_session", {"session_id": sid})
    return rows


def _in_place(server, warmup: int, iterations: int) -> dict:
    """Steps with snapshots off, back to back and after IDLE_SECONDS, each against
    `list_sessions` measured in the same loop."""
    sid = _create(server, [])
    _call(server, "execute_python", {"session_id": sid, "script": THREAD_SCRIPT})
    steps, protocol = _back_to_back(server, sid, False, warmup, iterations)
    idle_steps, idle_protocol = _after_idle(server, sid, False, warmup, iterations)
    _call(server, "close_session", {"session_id": sid})
    return {"in_place_step_ms": summarize_ns(steps), "in_place_protocol_ms": summarize_ns(protocol),
            "idle_in_place_step_ms": summarize_ns(idle_steps),
            "idle_in_place_protocol_ms": summarize_ns(idle_protocol)}


def measure(session, warmup: int, iterations: int) -> dict:
    """The session rows. Errors are reported in the result, never raised."""
    server = session.server
    out: dict = {}
    try:
        sid = _create(server, [])
        _call(server, "execute_python", {"session_id": sid, "script": "x = 1"})
        steps, protocol, resets, forks = [], [], [], []
        for i in range(warmup + iterations):
            step_ns = _step(server, sid, snapshots=True)
            _, list_ns = _call(server, "list_sessions", {})
            # Back to step 1 each time, so that the rewind always drops one step.
            _, reset_ns = _call(server, "reset_session", {"session_id": sid, "step": 1})
            f, fork_ns = _call(server, "fork_session", {"session_id": sid, "step": 1})
            _call(server, "close_session", {"session_id": (f["structured"] or {})["session_id"]})
            if i >= warmup:
                steps.append(step_ns)
                protocol.append(list_ns)
                resets.append(reset_ns)
                forks.append(fork_ns)
        # Steps that each continue the one before (kept: a chain, the oldest snapshots let go as
        # it grows past --session-snapshots), each right after the previous answer and a
        # `list_sessions`: the step's process is being forked as the step arrives.
        chain, chain_protocol = _chain(server, warmup, iterations)
        # After the same idle, the protocol's own cost is not what it is back to back: on a
        # machine whose idle CPUs sleep, waking the server (and the client) costs more.
        idle_steps, idle_protocol = _after_idle(server, sid, True, warmup, iterations, rewind=True)
        _call(server, "close_session", {"session_id": sid})
        out["step_ms"] = summarize_ns(steps)
        out["idle_step_ms"] = summarize_ns(idle_steps)
        out["protocol_ms"] = summarize_ns(protocol)
        out["idle_protocol_ms"] = summarize_ns(idle_protocol)
        out["chain_step_ms"] = summarize_ns(chain)
        out["chain_protocol_ms"] = summarize_ns(chain_protocol)
        out["reset_ms"] = summarize_ns(resets)
        out["fork_ms"] = summarize_ns(forks)
        out.update(_in_place(server, warmup, iterations))
        out.update(over_protocol(out))
    except (HarnessError, RequestTimeout, ServerExited, KeyError, TypeError) as e:
        out["error"] = f"session latency: {e}"
        return out
    try:
        sid = _create(server, ["pandas"])
        _call(server, "execute_python", {
            "session_id": sid,
            "script": "import numpy as np, pandas as pd\n"
                      "df = pd.DataFrame({'a': np.arange(10**6), 'b': np.arange(10**6) % 7})\nlen(df)"},
            timeout=300.0)
        before = _memory_bytes(server, sid)
        for i in range(SNAPSHOT_STEPS):
            _call(server, "execute_python", {"session_id": sid, "script": f"k = {i}\nint(df.b.sum())"})
        after = _memory_bytes(server, sid)
        _call(server, "close_session", {"session_id": sid})
        if before is None or after is None:
            out["snapshot_memory"] = {"skipped": "the session's memory is not measured on this host "
                                                 "(no cgroup)"}
        else:
            out["snapshot_memory"] = {"steps": SNAPSHOT_STEPS, "before_bytes": before, "after_bytes": after,
                                      "per_snapshot_kib": (after - before) / SNAPSHOT_STEPS / 1024}
    except (HarnessError, RequestTimeout, ServerExited, KeyError, TypeError) as e:
        out["snapshot_memory"] = {"error": f"pandas session: {e}"}
    return out


def over_protocol(rows: dict) -> dict:
    """A step's p50 less the protocol's own p50 measured in the same conditions: back to back,
    and after the same idle (where there is an idle `list_sessions` row)."""
    out = {"step_over_protocol_ms": rows["step_ms"]["p50"] - rows["protocol_ms"]["p50"]}
    if rows.get("idle_step_ms"):
        baseline = rows.get("idle_protocol_ms") or rows["protocol_ms"]
        out["idle_step_over_protocol_ms"] = rows["idle_step_ms"]["p50"] - baseline["p50"]
    for step, protocol in (("chain_step_ms", "chain_protocol_ms"),
                           ("in_place_step_ms", "in_place_protocol_ms"),
                           ("idle_in_place_step_ms", "idle_in_place_protocol_ms")):
        if rows.get(step) and rows.get(protocol):
            out[step.replace("_ms", "_over_protocol_ms")] = rows[step]["p50"] - rows[protocol]["p50"]
    return out


def section(results: dict, ms) -> list[str]:
    """The report's lines for results["sessions"]."""
    s = results.get("sessions")
    if not s:
        return []
    lines = ["## Sessions (one stdio connection, one call at a time)", ""]
    if s.get("error"):
        return lines + [f"Not measured: {s['error']}", ""]
    lines += ["| call | n | p50 ms | p90 ms | p99 ms |", "|---|---:|---:|---:|---:|"]
    for key, title in (("protocol_ms", "`list_sessions` (the protocol's own cost)"),
                       ("step_ms", "a step in a warm session (`x + 1`), after a rewind"),
                       ("chain_step_ms", "a step right after the previous one, each kept (a chain, back to back)"),
                       ("idle_protocol_ms", f"`list_sessions`, the connection idle {IDLE_SECONDS * 1000:.0f} ms before it"),
                       ("idle_step_ms", f"the step, the session idle {IDLE_SECONDS * 1000:.0f} ms before it"),
                       ("in_place_step_ms", "the step with snapshots off (run in place: no fork), back to back"),
                       ("idle_in_place_step_ms", f"the step with snapshots off, the session idle {IDLE_SECONDS * 1000:.0f} ms before it"),
                       ("reset_ms", "`reset_session` (one step back)"),
                       ("fork_ms", "`fork_session`")):
        v = s.get(key)
        if v:
            lines.append(f"| {title} | {v['n']} | {ms(v['p50'])} | {ms(v['p90'])} | {ms(v['p99'])} |")
    idle = s.get("idle_step_over_protocol_ms")
    idle_text = ""
    if idle is not None:
        idle_text = f", {ms(idle)} ms when the session was idle before it"
        if s.get("idle_protocol_ms"):
            idle_text += " (over `list_sessions` after the same idle)"
    chain = s.get("chain_step_over_protocol_ms")
    chain_text = "" if chain is None else f", {ms(chain)} ms in a chain of steps back to back, each kept"
    lines += ["", f"A step costs {ms(s.get('step_over_protocol_ms'))} ms (p50) over the protocol's own cost "
              f"(target ≤ 0.5 ms){idle_text}{chain_text}; a rewind or a fork, target ≤ 2 ms.", ""]
    in_place, idle_in_place = s.get("in_place_step_over_protocol_ms"), s.get("idle_in_place_step_over_protocol_ms")
    if in_place is not None:
        lines += [f"With snapshots off (the session's interpreter runs a thread, so steps run in place: no fork, "
                  f"no page copies) the same step costs {ms(in_place)} ms over `list_sessions` measured alongside"
                  + (f", {ms(idle_in_place)} ms after the same idle" if idle_in_place is not None else "")
                  + ": what taking the snapshot adds is the difference.", ""]
    m = s.get("snapshot_memory") or {}
    if m.get("per_snapshot_kib") is not None:
        lines += [f"Memory per snapshot of a pandas session (a 10⁶-row DataFrame, {m['steps']} small steps): "
                  f"{m['per_snapshot_kib']:.0f} KiB (the session's cgroup: "
                  f"{m['before_bytes'] / 1048576:.1f} → {m['after_bytes'] / 1048576:.1f} MiB).", ""]
    elif m:
        lines += [f"Memory per snapshot: not measured ({m.get('skipped') or m.get('error')}).", ""]
    return lines
