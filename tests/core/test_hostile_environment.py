"""Hostile input from what a run meets besides its options: a task with no query row, user code (maps and
modules that exit, sleep or print), W and feature files beyond float64, hostile plugins, schedulers, SIGTERM and
the cache files' mode.  Each is refused in one line with the documented exit code within 2 s, never a
traceback, a vacuous answer or a hang.
"""

from __future__ import annotations

import time

import pytest

from verify.frontends.cli import main


def run(capsys, *args: str) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err, time.perf_counter() - t0


def refused(capsys, *args: str, within: float = 2.0) -> str:
    """The command exits 2 with exactly one stderr line and no stdout, in under ``within`` seconds."""
    rc, out, err, secs = run(capsys, *args)
    assert rc == 2, (args, rc, out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("verify: error: "), err
    assert "Traceback" not in err and out == ""
    assert secs < within, (args, secs)
    return err


# ------------------------------------------------------------------ 1. a task with no query row

@pytest.mark.parametrize("task", [["--target", "i + 1"], ["--target", "i - 1", "--rows", "L"]])
@pytest.mark.parametrize("pe", [["--pe", "nope"], ["--pe-features", "1, i"]])
def test_realizable_refuses_a_task_without_rows_like_alpha(capsys, task, pe):
    """No query row at --L: W = 0 would 'realize' it vacuously; alpha refuses the same task at --L0."""
    err = refused(capsys, "realizable", *pe, *task, "--L", "8")
    assert "no query row at --L 8" in err
    err = refused(capsys, "alpha", *pe, *task, "--L0", "4", "--L", "8")
    assert "no query row at --L0 4" in err


# ------------------------------------------------------------------ 2. user code runs under a guard

USER_MODULE = '''
import time
def exits(pos):
    raise SystemExit(0)
def sleeps(pos):
    try:
        time.sleep(60)
    except Exception:
        pass
def prints(pos):
    import torch
    print("HELLO from the user's map")
    return torch.stack([torch.ones(len(pos), dtype=torch.float64), pos.double()], 1)
'''


_names = iter(range(10**6))


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user module ``hostile_pe_<n>`` in the current directory (a fresh name: no cached import)."""
    import sys

    name = f"hostile_pe_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    (tmp_path / "exits_at_import.py").write_text("raise SystemExit(0)\n")
    monkeypatch.chdir(tmp_path)
    yield name
    for m in (name, "exits_at_import"):
        sys.modules.pop(m, None)


@pytest.mark.parametrize("cmd", [["alpha", "--require-alpha", "1"], ["realizable", "--L", "8"]])
def test_user_map_that_exits_is_refused(capsys, user_module, cmd):
    """SystemExit(0) in the user's map passed a --require-alpha gate with exit 0 and no output."""
    err = refused(capsys, *cmd[:1], "--pe", f"{user_module}:exits", "--task", "prev", *cmd[1:])
    assert "called exit(0)" in err


def test_user_module_that_exits_at_import_is_refused(capsys, user_module):
    err = refused(capsys, "alpha", "--pe", "exits_at_import:f", "--task", "prev", "--require-alpha", "1")
    assert "called exit(0)" in err


def test_user_map_that_sleeps_is_stopped_at_its_time_limit(capsys, user_module):
    """A map sleeping 60 s (and swallowing Exception) is stopped at --user-timeout, once, not per call."""
    err = refused(capsys, "alpha", "--pe", f"{user_module}:sleeps", "--task", "prev", "--user-timeout", "0.5")
    assert "time limit of 0.5 s" in err


def test_user_map_prints_stay_out_of_the_json(capsys, user_module):
    import json

    rc, out, err, _ = run(capsys, "alpha", "--pe", f"{user_module}:prints", "--task", "prev", "--L0", "6", "--L", "8",
                          "--steps", "5", "--format", "json")
    assert rc == 0, err
    assert json.loads(out)["pe"] == f"callable({user_module}:prints)"
    assert "HELLO from the user's map" in err and "HELLO" not in out


# ------------------------------------------------------------------ 3. values beyond float64, ragged arrays

@pytest.mark.parametrize("content, needle", [
    ('[["1"], ["1", "2"]]', "not a rectangular array"),
    ('[[1, 2], [3]]', "not a rectangular array"),
    ('[["' + "9" * 1999 + '", "1"], ["1", "1"]]', "beyond the float64 range"),
    ('[[' + "9" * 1999 + ', 1], [1, 1]]', "beyond the float64 range"),
])
def test_W_json_ragged_or_huge_is_refused(capsys, tmp_path, content, needle):
    f = tmp_path / "w.json"
    f.write_text(content)
    err = refused(capsys, "alpha", "--pe-features", "1, i", "--task", "prev", "--W", str(f))
    assert needle in err


@pytest.mark.parametrize("expr", ["1e400", "1e400, i", "i * 1e400", "sin(1e400)"])
@pytest.mark.parametrize("cmd", [["alpha"], ["realizable", "--L", "8"]])
def test_feature_constant_beyond_float64_is_refused(capsys, cmd, expr):
    err = refused(capsys, cmd[0], "--pe-features", expr, "--task", "prev", *cmd[1:])
    assert "beyond the float64 range" in err


# ------------------------------------------------------------------ 4. hostile plugins

@pytest.fixture
def plugin(monkeypatch):
    """Entry points into an in-memory module ``hostile_pack`` (its PAPER set by the test)."""
    import sys
    import types
    from importlib.metadata import EntryPoint

    from verify.core import registry

    mod = types.ModuleType("hostile_pack")
    monkeypatch.setitem(sys.modules, "hostile_pack", mod)
    monkeypatch.setattr(registry, "_plugins", lambda: {"toy": EntryPoint("toy", "hostile_pack:PAPER", registry.ENTRY_POINT_GROUP)})
    monkeypatch.setattr(registry, "_reported", set())
    registry.paper.cache_clear()
    yield mod
    registry.paper.cache_clear()


def _toy_claim(cid: str, title: str = "t"):
    from verify.core.model import Claim
    from verify.evidence import Evidence

    def sym(p, ctx):
        return Evidence(layer="symbolic", status="proved", summary="1 + 1 = 2")

    return Claim(id=cid, title=title, source="s", statement="1 + 1 = 2", options=(), checks={"symbolic": sym},
                 expected={"": "HOLDS"})


@pytest.mark.parametrize("setup, needle", [
    (lambda m: setattr(m, "PAPER", __import__("verify.core.model", fromlist=["Paper"]).Paper(
        key="toy", title="Toy", claims=(_toy_claim("toy:a\x1b[31m\x00b"),))), "registers claim id"),
    (lambda m: setattr(m, "PAPER", __import__("verify.core.model", fromlist=["Paper"]).Paper(
        key="toy", title="Toy", claims=(_toy_claim("toy:ok", title="bad\x07title"),))), "control character"),
    (lambda m: None, "failed to load"),                     # no PAPER: loading it raises
])
def test_a_hostile_plugin_is_reported_once_and_skipped(capsys, tmp_path, plugin, setup, needle):
    """A plugin with a control character in a claim id (or title), or one that fails to load, no
    longer takes the built-in claims down: `verify list` lists them (exit 0) with one warning line,
    and the claim with the bad id never reaches a report (`verify all --junit` wrote malformed XML)."""
    import json

    setup(plugin)
    rc, out, err, secs = run(capsys, "list", "--format", "json")
    assert rc == 0 and secs < 2.0, err
    ids = [c["claim"] for c in json.loads(out)]
    assert "pr26:theorem1" in ids and not any(i.startswith("toy:") for i in ids)
    assert len(err.strip().splitlines()) == 1 and needle in err and "\x1b" not in err and "\x00" not in err
    rc, out, err, _ = run(capsys, "list")
    assert rc == 0 and err == "" and "\x1b" not in out  # reported once per process
    err = refused(capsys, "audit", "toy")                  # naming the broken paper itself is refused
    assert needle in err and "\x1b" not in err



# ------------------------------------------------------------------ 5. schedulers

@pytest.mark.parametrize("claim", ["pr26:auc", "fp26:fingerprint"])
def test_tls_scheduler_is_refused_before_work(capsys, claim):
    """tls:// passed the parser and failed later with a TypeError (no security configuration)."""
    err = refused(capsys, claim, "--scheduler", "tls://127.0.0.1:9")
    assert "only tcp://HOST:PORT" in err


def test_an_address_answering_garbage_is_one_line():
    """A listener that answers garbage (frame headers of 2^64-1) makes Client() raise (a ValueError here,
    a MemoryError of '3.07 EiB' elsewhere), which must not pass for a numeric error: it is
    SchedulerUnreachable, one line."""
    import socket
    import threading

    from verify.numeric import grid

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            try:
                conn.sendall(b"\xff" * 64)
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        t0 = time.perf_counter()
        with pytest.raises(grid.SchedulerUnreachable) as exc:
            grid.run_grid(str, [1], scheduler=f"tcp://127.0.0.1:{port}", connect_timeout_s=2)
        assert time.perf_counter() - t0 < 10
    finally:
        stop.set()
        t.join()
        srv.close()
    assert "\n" not in str(exc.value) and f"127.0.0.1:{port}" in str(exc.value)


# ------------------------------------------------------------------ 6. --no-timings is byte-identical

def test_no_timings_zeroes_the_falsifier_training_time():
    """kvshift24:falsifier's numbers carry each model's train_s; two uncached runs differ there, so
    --no-timings must zero it for the JSON to be byte-identical.  Run twice, render as --no-timings does."""
    import json

    from verify.evidence import to_jsonable
    from verify.numeric import kvshift24_trained as k
    from verify.reports.text import _zero_timings

    sz = k.FalsifierSizes(d=16, H=1, V=32, T=32, n_pairs=4, batch=8, steps=2, lr=5e-3, n_eval=8)
    a, b = (k.check_falsifier(sz, [0], None).to_dict() for _ in range(2))
    assert a["numbers"]["kvshift1"]["train_s"] > 0  # the field is there and measured
    assert json.dumps(to_jsonable(_zero_timings(a))) == json.dumps(to_jsonable(_zero_timings(b)))


# ------------------------------------------------------------------ 7. SIGTERM is taken like Ctrl-C

def test_sigterm_in_a_watched_run_is_an_interrupt_with_exit_143():
    """In-process: under interrupts.watching() SIGTERM raises KeyboardInterrupt (not the default
    action, the process gone at once) and the exit code is 128 + 15."""
    import os
    import signal

    from verify import interrupts

    with pytest.raises(KeyboardInterrupt):
        with interrupts.watching():
            assert signal.getsignal(signal.SIGTERM) != signal.SIG_DFL, "SIGTERM not taken (it would end pytest)"
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                time.sleep(0.001)
            pytest.fail("SIGTERM did not interrupt the run")
    assert interrupts.exit_code() == 143
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # restored


@pytest.mark.parametrize("cmd", [["all"], ["audit", "pr26"]])
def test_sigterm_stops_a_parallel_run_with_one_line_and_no_stray_workers(cmd):
    """SIGTERM to verify (as `kill PID` or a service manager sends it) mid-run: exit 143 within 2 s, the
    one line 'verify: aborted' (no resource-tracker warning: the pool is shut down), no worker left."""
    import os
    import signal
    import subprocess
    import sys

    def group() -> list[str]:  # the live processes of the run's session: "pid stat args"
        ps = subprocess.run(["ps", "-s", str(p.pid), "-o", "pid=,stat=,args="], capture_output=True, text=True).stdout
        return [x.strip() for x in ps.splitlines() if x.strip() and x.split()[1][0] != "Z"]

    p = subprocess.Popen([sys.executable, "-m", "verify", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    deadline = time.time() + 60
    while len(group()) < 3 and time.time() < deadline:  # once workers exist
        time.sleep(0.05)
    time.sleep(0.5)
    tracker = {x.split()[0] for x in group() if "resource_tracker" in x}
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    secs = time.time() - t0
    left: list[str] = []
    for _ in range(12):
        left = [x for x in group() if x.split()[0] not in tracker]
        if not left:
            break
        time.sleep(0.25)
    assert p.returncode == 143 and err.strip() == "verify: aborted" and out == "", (p.returncode, err[-1500:])
    assert secs < 2.0 and left == [], (secs, left)


# ------------------------------------------------------------------ 8. cache files: one permission rule

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_cache_checkpoints_get_0666_less_the_umask(tmp_path, umask, mode):
    """Checkpoints get 0666 less the umask, as the README says of every output (mkstemp alone gives 0600)."""
    import os
    import stat

    import torch

    from verify.numeric import lab

    r = lab.Recipe(name="perm", version="1", config={"n": 1}, init=lambda g: {"w": torch.zeros(1)},
                   data=lambda step, gens: torch.zeros(len(gens), 1), loss=lambda p, x: (p["w"] ** 2).sum(dim=-1),
                   optim=lab.Optim(kind="adam", lr=0.1, steps=1))
    old = os.umask(umask)
    try:
        path = lab.Cache(tmp_path).save(r, [0], {"w": torch.zeros(1, 1)}, torch.zeros(1, 1))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_one_atomic_write_for_every_output(tmp_path):
    """verify.safeio.atomic_write (outputs, checkpoints, the kernel's build record): the old file or the new one,
    never a half-written one; a failed write leaves the old file and no temporary file; the usual permissions."""
    import os

    from verify.safeio import atomic_write

    target = tmp_path / "out.json"
    atomic_write(target, lambda fh: fh.write(b"old"))
    assert target.read_bytes() == b"old" and (target.stat().st_mode & 0o777) == 0o666 & ~_current_umask()

    def fails(fh):
        fh.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, fails)
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["out.json"]


def _current_umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask
